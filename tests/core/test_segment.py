"""Overlapping segmentation covers every unit and reports coverage honestly."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from worker.core.segment import coverage_of, segment_spans


@given(st.integers(0, 100_000), st.integers(1, 5000), st.data())
def test_segments_cover_everything(total, window, data):
    """Windows span [0, total) with no gap and never exceed the window size."""
    overlap = data.draw(st.integers(0, window - 1))
    spans = list(segment_spans(total, window, overlap))
    assert coverage_of(spans, total).complete
    assert all(end - start <= window for start, end in spans)
    assert spans[-1][1] == total


def test_overlap_lets_a_straddling_pattern_be_seen_whole():
    """A pattern shorter than the overlap lies inside at least one window."""
    spans = list(segment_spans(10_000, 1000, 200))
    pattern = (4950, 5100)
    assert any(s <= pattern[0] and pattern[1] <= e for s, e in spans)


def test_missing_window_is_partial_coverage():
    """Dropping a window shows up as incomplete coverage."""
    spans = list(segment_spans(3000, 1000, 0))
    cov = coverage_of(spans[:-1], 3000)
    assert not cov.complete and cov.scanned_bytes == 2000


@given(st.lists(st.tuples(st.integers(0, 5000), st.integers(0, 5000)), max_size=40), st.randoms())
def test_coverage_is_the_union_of_windows_in_any_order(spans, random):
    """Coverage counts each covered unit once, whatever order the windows come in, even as an iterator."""
    total = 4000
    covered = {unit for start, end in spans for unit in range(start, min(end, total))}
    random.shuffle(spans)
    cov = coverage_of(iter(spans), total)
    assert cov.scanned_bytes == len(covered) and cov.segments == len(spans)
