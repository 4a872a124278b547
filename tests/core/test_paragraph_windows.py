"""Paragraph windows: a windowed model also reads each mid-sized paragraph on its own."""

from __future__ import annotations

import numpy as np
import pytest

from worker.core.detector import verdict_output
from worker.core.errors import ConfigError
from worker.detectors.local.lexical import LexicalDetector
from worker.detectors.local.windows import PARAGRAPH_VIEW_BYTES, paragraph_spans, scored_answer

HARMFUL, HARMLESS = verdict_output("harmful"), verdict_output("harmless")


class ShareModel:
    """Scores a window by the share of its bytes that are ``h``: an order diluted by what
    surrounds it in a window, as the n-grams normalised over a window dilute it."""

    window, overlap, threshold, null = 512, 128, 0.9, None

    def __init__(self) -> None:
        self.windows: list[str] = []

    def logits(self, windows: list[str]) -> np.ndarray:
        self.windows += windows
        return np.array([10.0 * w.count("h") / max(1, len(w)) - 5.0 for w in windows])


def page(order: bytes) -> bytes:
    """An issue: a title block, the order as the description, a comment."""
    return b"x" * 300 + b"\n\n" + order + b"\n\n" + b"x" * 300 + b"\n"


def test_a_paragraph_read_alone_is_not_diluted_by_its_neighbours() -> None:
    """The order between a title and a comment is found only when its paragraph is read alone,
    and the vote names that paragraph's bytes."""
    data = page(b"h" * 300)
    assert scored_answer(data, ShareModel(), 0.9).output == HARMLESS
    answer = scored_answer(data, ShareModel(), 0.9, paragraphs=200)
    assert answer.output == HARMFUL
    best = answer.windows[0]
    assert (best.start, best.end) == (302, 602) and data[best.start : best.end] == b"h" * 300
    assert answer.coverage.scanned_bytes == answer.coverage.total_bytes == len(data)


def test_short_long_and_unbroken_text_adds_no_paragraph_window() -> None:
    """Paragraphs under the minimum or over a window, and text without a blank line, stay with the
    windows; a blank line in a diff (an added or a context line) breaks paragraphs too."""
    assert list(paragraph_spans(b"a" * 400, 100, 512)) == []
    text = b"a" * 50 + b"\n\n" + b"b" * 200 + b"\n \n" + b"c" * 600 + b"\n+\n" + b"d" * 150
    assert [text[s:e][:1] for s, e in paragraph_spans(text, 100, 512)] == [b"b", b"d"]
    assert [e - s for s, e in paragraph_spans(text, 100, 512)] == [200, 150]


def log(order: bytes) -> bytes:
    """A service's log: lines with no blank line between them, the order one of them."""
    return (
        b"".join(b"2026-03-01T00:00:%02dZ INFO [api] " % n + b"x" * 60 + b"\n" for n in range(6))
        + order
        + b"\n"
    )


def test_a_line_of_a_text_without_blank_lines_is_read_alone() -> None:
    """In a log (lines, no blank line) each long line is a paragraph: the order is found, and the vote
    names that line's bytes; a text of one line is left to its windows."""
    data = log(b"h" * 320)
    assert scored_answer(data, ShareModel(), 0.9).output == HARMLESS
    answer = scored_answer(data, ShareModel(), 0.9, paragraphs=300)
    assert answer.output == HARMFUL
    best = answer.windows[0]
    assert data[best.start : best.end] == b"h" * 320
    assert list(paragraph_spans(b"h" * 320 + b"\n", 300, 512)) == []
    assert list(paragraph_spans(log(b"h" * 120), 300, 512)) == []  # every line under the minimum


def test_views_past_the_limit_are_read_in_windows_only() -> None:
    """Paragraphs are read in texts of up to PARAGRAPH_VIEW_BYTES; longer ones in windows alone."""
    short, long = ShareModel(), ShareModel()
    scored_answer(page(b"h" * 300), short, 0.9, paragraphs=200)
    assert any(w == "h" * 300 for w in short.windows)
    big = page(b"h" * 300) + (b"y" * 400 + b"\n\n") * (PARAGRAPH_VIEW_BYTES // 400)
    scored_answer(big, long, 0.9, paragraphs=200)
    assert not any(w == "h" * 300 for w in long.windows)


@pytest.mark.parametrize("value", [True, 0, -5, "300", 2.5])
def test_paragraphs_must_be_a_positive_number_of_bytes(value: object) -> None:
    """A YAML true, a string or a fraction is a configuration error, caught when the detector is made."""
    with pytest.raises(ConfigError, match="paragraphs"):
        LexicalDetector(name="lexical", paragraphs=value)
    assert LexicalDetector(name="lexical", paragraphs=300).paragraphs == 300


def test_the_preflight_knows_every_option_a_model_detector_reads() -> None:
    """The shipped policy's ``paragraphs`` passes the start-up check; an option no detector reads
    is refused there, by name (the list lives on the detector, so the two cannot drift apart)."""
    from policies.loader import load_policy
    from worker.detectors.preflight import check_policy

    policy = load_policy("prompt-injection")
    check_policy(policy)
    specs = tuple(
        s.model_copy(update={"options": {**s.options, "bogus": 1}}) if s.name == "lexical" else s
        for s in policy.quorum.detectors
    )
    bad = policy.model_copy(update={"quorum": policy.quorum.model_copy(update={"detectors": specs})})
    with pytest.raises(ConfigError, match=r"unknown options \['bogus'\]"):
        check_policy(bad)
