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
    """How many of ``[0, total)`` the union of ``spans`` covers (in one pass: the windows of a
    100 MB artifact are never held as a list; spans in order cost nothing to merge)."""
    union: list[tuple[int, int]] = []  # disjoint, in order
    for start, end in spans:
        end = min(end, total)
        if end <= start:
            continue
        if union and union[-1][0] <= start <= union[-1][1]:
            union[-1] = (union[-1][0], max(union[-1][1], end))
        elif not union or start > union[-1][1]:
            union.append((start, end))
        else:  # out of order: merge again from scratch (rare; the union stays short)
            union = merged_spans([*union, (start, end)])
    return sum(end - start for start, end in union)


def merged_spans(spans: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """``[start, end)`` spans sorted, those that overlap or touch joined into one."""
    out: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if out and start <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((start, end))
    return out


def coverage_of(
    spans: Iterable[tuple[int, int]], total: int, window: int | None = None, overlap: int | None = None
) -> Coverage:
    """Coverage of ``total`` units by the windows actually scanned (an iterator is read once)."""
    segments = 0

    def counted() -> Iterator[tuple[int, int]]:
        nonlocal segments
        for span in spans:
            segments += 1
            yield span

    scanned = covered_units(counted(), total)
    return Coverage(
        total_bytes=total,
        scanned_bytes=scanned,
        segments=segments,
        window_bytes=window,
        overlap_bytes=overlap,
    )
