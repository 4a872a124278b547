"""Local detectors: rules, the trained lexical and semantic models, and a static test double."""
