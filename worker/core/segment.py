"""Overlapping segmentation: scan everything, then say what was covered."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from worker.core.models import Coverage


def segment_spans(total: int, window: int, overlap: int) -> Iterator[tuple[int, int]]:
    """Yield ``[start, end)`` windows of at most ``window`` units covering ``[0, total)``.

    Consecutive windows share ``overlap`` units so a pattern that straddles a
    boundary shorter than ``overlap`` is seen whole by at least one window.
    """
    if window <= 0:
        raise ValueError("window must be positive")
    if not 0 <= overlap < window:
        raise ValueError("overlap must be in [0, window)")
    if total <= 0:
        yield (0, 0)
        return
    step = window - overlap
    start = 0
    while True:
        end = min(total, start + window)
        yield (start, end)
        if end >= total:
            return
        start += step


def covered_units(spans: Iterable[tuple[int, int]], total: int) -> int:
    """How many of ``[0, total)`` the union of ``spans`` covers."""
    covered = 0
    reach = 0
    for start, end in sorted(spans):
        start, end = max(start, reach), min(end, total)
        if end > start:
            covered += end - start
            reach = end
    return covered


def coverage_of(
    spans: Iterable[tuple[int, int]], total: int, window: int | None = None, overlap: int | None = None
) -> Coverage:
    """Coverage of ``total`` units by the windows actually scanned."""
    spans = list(spans)
    return Coverage(
        total_bytes=total,
        scanned_bytes=covered_units(spans, total),
        segments=len(spans),
        window_bytes=window,
        overlap_bytes=overlap,
    )
