"""Detectors that ask a language model: chat verdict backends and the canary probe."""
