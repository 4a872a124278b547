"""A diff without its removed lines is read as pieces of the diff, not as a copy of them."""

from __future__ import annotations

import hypothesis.strategies as st
from hypothesis import given, settings

from worker.core.views import ADDED, Spliced, added_view, scanned_views


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.binary(max_size=40), max_size=8),
    st.integers(min_value=-5, max_value=200),
    st.integers(min_value=-5, max_value=200),
)
def test_a_spliced_view_slices_as_the_joined_bytes_would(pieces, start, stop):
    joined = b"".join(pieces)
    # the pieces as spans of one buffer, each followed by a byte that the view leaves out
    buffer = b"".join(p + b"\xff" for p in pieces)
    ends = [sum(len(q) + 1 for q in pieces[: i + 1]) - 1 for i in range(len(pieces))]
    view = Spliced(buffer, [(end - len(p), end) for p, end in zip(pieces, ends, strict=True)])
    assert len(view) == len(joined)
    assert view[start:stop] == joined[start:stop]
    assert bytes(view) == joined


DIFF = (
    b"diff --git a/app.py b/app.py\n--- a/app.py\n+++ b/app.py\n@@ -1,3 +1,3 @@\n"
    b" import os\n-steal_wallets()\n+print('hello')\n context line\n"
)


def test_the_scanned_added_view_is_the_diff_without_its_removed_lines_uncopied():
    name, view = next(iter(scanned_views(DIFF, added_only=True)))
    assert name == ADDED and isinstance(view, Spliced)
    assert bytes(view) == added_view(DIFF) and b"steal_wallets" not in bytes(view)
    assert view[0 : len(view)] == added_view(DIFF)
