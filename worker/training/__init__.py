"""Reproducible training of the local model detectors (``python -m worker.training``).

Heavy libraries (scikit-learn, and torch/model2vec for the one-off
distillation) are imported only here, never by the detectors at scan time.
"""
