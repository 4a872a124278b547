"""The semantic detector's own parts: the shipped tokenizer keeps long windows whole. What both
trained detectors share is in ``test_trained_detectors.py``."""

from __future__ import annotations

from worker.detectors.local.semantic import load_embedding


def test_tokenizer_does_not_truncate() -> None:
    """The shipped tokenizer keeps every token of a long window (no 512-token cut)."""
    embedding = load_embedding()
    encoding = embedding.tokenizer.encode("word " * 2000, add_special_tokens=False)
    assert len(encoding.ids) == 2000
