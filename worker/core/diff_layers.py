"""The layers a diff's window adds to the pre-check's scan: the text with each added line's ``+``
read as a space (:func:`unmarked`), its added lines alone (:func:`added_layer`) and the
sentence-like string literals of its added code lines without their quotes
(:func:`literal_layer`). Each keeps the offsets of the artifact's bytes (:mod:`worker.core.precheck`
reads them in :func:`worker.core.precheck._layers`)."""

from __future__ import annotations

from worker.core.diff import Diff
from worker.core.normalize import Compose, Layer, PieceBuilder, normalize
from worker.core.prose import is_code, sentence_spans


def unmarked(window: bytes, at_line_start: bool = True) -> bytes:
    """A diff's text with the ``+`` that marks each added line read as a space (same length, same
    offsets), so a rule reads an added line as the line it adds: ``^User:``, ``Ignore all previous
    instructions`` at the start of a line, as on a context line. A removed line keeps its ``-``
    (``at_line_start``: whether ``window`` starts a line)."""
    shown = window.replace(b"\n+", b"\n ")
    if at_line_start and shown[:1] == b"+":
        shown = b" " + shown[1:]
    return shown


def added_layer(window: bytes, start: int, end: int, diff: Diff) -> Layer:
    """The diff's added lines within ``[start, end)`` (``window`` holds those bytes of the artifact,
    escapes unglued), ``+`` markers blanked, normalized, mapped back."""
    builder = PieceBuilder()
    for s, e in diff.added_runs(start, end):
        builder.add(unmarked(window[s - start : e - start]), s, e, True)
    raw, pieces = builder.build()
    norm = normalize(raw)
    return Layer("added", norm.data, Compose(norm.offsets, pieces))


def literal_layer(window: bytes, start: int, end: int, diff: Diff) -> Layer | None:
    """The sentence-like string literals on the diff's added code lines within ``[start, end)``, one
    a line, without their quotes (``window`` holds those bytes, escapes unglued); None if none."""
    builder = PieceBuilder()
    runs = diff.added_runs(start, end)
    # the runs' files in one search, and each run read in place in the window: a file lookup and a
    # copy of every added run were 4 % of malicious-package's time on real diffs
    for (s, e), index in zip(runs, diff.file_indices([s for s, _ in runs]), strict=True):
        lo, hi = s - start, e - start
        if index < 0 or not is_code(diff.files[index].path) or not _has_quote(window, lo, hi):
            continue
        for a, b in sentence_spans(window, lo, hi):  # the closing quote reads as a break
            builder.add(window[a:b] + b"\n", start + a, start + b + 1, True)
    if not builder.size:
        return None
    raw, pieces = builder.build()
    norm = normalize(raw)
    return Layer("prose", norm.data, Compose(norm.offsets, pieces))


def _has_quote(window: bytes, lo: int, hi: int) -> bool:
    return window.find(b'"', lo, hi) >= 0 or window.find(b"'", lo, hi) >= 0 or window.find(b"`", lo, hi) >= 0
