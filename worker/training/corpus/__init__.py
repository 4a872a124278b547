"""Extra prompt-injection training data: generated attacks and negatives, real READMEs.

``python -m worker.training.corpus fetch`` fills the README cache from the registries;
``python -m worker.training.corpus build`` writes the committed corpus
(``worker/training/corpus/data/``) from the cache, the generators and, when given, public sets.
"""
