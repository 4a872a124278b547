"""The views of an artifact a local model reads, each named, so a window can point into one.

A windowed model (:mod:`worker.detectors.local.windows`) scores windows of more than the raw
bytes: a diff without its removed lines, an e-mail's decoded text parts, a diff's prose. A vote
names its best windows by view and byte offsets into that view, never by their text
(:class:`worker.core.models.ScoredWindow`); a reviewer's tool rebuilds the view from the stored
artifact with :func:`view_bytes` to show them. The names:

- ``raw``: the artifact's bytes as stored;
- ``added``: a diff without its removed lines (:func:`added_view`);
- ``unencoded``: an e-mail without the encoded bodies of the text parts it is read as, decoded
  (:func:`unencoded_view`), read instead of ``raw``; named by raw bytes, as ``added`` is;
- ``references``: a text that spells letters as HTML character references (``&#73;``), each
  written as its character (:func:`worker.core.references.referenced_view`), read instead of
  ``raw``; named by raw bytes, as ``added`` is;
- ``folded``: a text that writes Latin letters in disguise (fullwidth, mathematical, look-alike
  Cyrillic or Greek letters in Latin words, zero-width spaces) folded as the pre-check folds it
  (:func:`worker.core.normalize.folded_view`), read instead of ``raw``; named by raw bytes;
- ``added-references``, ``added-folded``: a diff's ``added`` view read as ``references`` or
  ``folded`` reads a text, where the lines it adds spell letters or write them in disguise
  (:func:`_added_shown`); named by raw bytes through the added view;
- ``fields-references``, ``fields-folded``: a JSON document's ``fields`` read so, where its
  strings spell letters or write them in disguise (:func:`_fields_shown`); named by raw bytes
  through the fields;
- ``decoded:N``: the N-th decoded text part of an e-mail (:func:`worker.core.mail.decoded_text_parts`),
  its character references read or its disguised letters folded where it writes them so;
- ``prose``: the comments, docstrings and sentences a diff adds (:func:`worker.core.prose.diff_prose`);
- ``fields``: a JSON document written in escapes or longer than 16 KB, its strings as
  ``path: value`` lines (:func:`worker.core.fields.json_fields`), read instead of ``raw``; a window
  of it is named by where it lies in the raw bytes, as one of ``added`` is (:func:`raw_span`).

With ``prose``, the first of them (``raw``, ``added`` or ``fields``) is read with the sentences it
writes as slugs (words joined by ``-``, ``+``, ``_`` or ``%20``) written with spaces, in place
(:class:`worker.core.slugs.Deslugged`): the offsets are the view's own.
"""

from __future__ import annotations

import re
from array import array
from bisect import bisect_right
from collections.abc import Iterable, Iterator
from itertools import chain

import numpy as np
import numpy.typing as npt

from worker.core.diff import parse_diff
from worker.core.fields import Fields, json_fields
from worker.core.mail import decoded_text_parts, text_parts
from worker.core.normalize import folded_view, writes_disguised
from worker.core.offsets import Mapped
from worker.core.prose import diff_prose, prose_pieces
from worker.core.references import referenced_view, spells_letters
from worker.core.segment import merged_spans, segment_spans
from worker.core.slugs import Deslugged, slug_runs


class Spliced:
    """Spans of one buffer read as if joined, without the copy: ``len`` and slices (``[a:b]`` gives
    bytes) as the joined bytes would. A diff without its removed lines is most of the diff; joined,
    it doubled a large release in memory while its windows were scored. The spans are kept as two
    arrays of offsets (16 bytes a span): a memoryview per piece, 63,680 of them in a 100 MB release,
    cost 24 MB."""

    __slots__ = ("_buffer", "_ends", "_starts")

    def __init__(self, buffer: bytes, spans: npt.ArrayLike) -> None:
        """``spans``: ``[start, end)`` pairs of ``buffer``, in order; empty ones are dropped."""
        pairs = np.asarray(spans, dtype=np.int64).reshape(-1, 2)
        pairs = pairs[pairs[:, 1] > pairs[:, 0]]
        self._buffer = memoryview(buffer)
        self._starts = array("q", pairs[:, 0].tobytes())  # where each span starts in ``buffer``
        self._ends = array("q", np.cumsum(pairs[:, 1] - pairs[:, 0]).tobytes())  # ... ends, joined

    def __len__(self) -> int:
        return self._ends[-1] if self._ends else 0

    def __getitem__(self, key: slice) -> bytes:
        start, stop, step = key.indices(len(self))
        if step != 1:
            raise ValueError("a spliced view is read in contiguous slices")
        out: list[memoryview] = []
        index, ends, starts = bisect_right(self._ends, start), self._ends, self._starts
        while start < stop and index < len(ends):
            begin = ends[index - 1] if index else 0  # the span's first byte, joined
            take = min(stop, ends[index])
            at = starts[index] - begin
            out.append(self._buffer[at + start : at + take])
            start, index = take, index + 1
        return b"".join(out)

    def __bytes__(self) -> bytes:
        return self[0 : len(self)]

    def buffer_offset(self, index: int) -> int:
        """Where the byte at ``index`` of the joined view lies in the buffer."""
        at = bisect_right(self._ends, index)
        begin = self._ends[at - 1] if at else 0
        return self._starts[at] + index - begin

    def span(self, start: int, end: int) -> tuple[int, int]:
        """Where the joined bytes ``[start, end)`` lie in the buffer, first to last (the spans left
        out between them included): an :class:`worker.core.offsets.OffsetMap`. An empty or outside
        span: an empty one where its start lies."""
        if not 0 <= start < end <= len(self):
            at = self.buffer_offset(min(max(start, 0), len(self) - 1)) if len(self) else 0
            return at, at
        return self.buffer_offset(start), self.buffer_offset(end - 1) + 1

    def pieces(self) -> Iterator[memoryview]:
        """The spans, in order, each as a view of the buffer (no copy)."""
        begin = 0
        for start, end in zip(self._starts, self._ends, strict=True):
            yield self._buffer[start : start + end - begin]
            begin = end


class Streamed:
    """A view produced front to back and read once, in windows, without ever being held whole: a
    diff's prose (:func:`worker.core.prose.prose_pieces`). Gathered whole, the prose of a 100 MB
    release was 18.6 MB, and 43 MB at the peak while its buffer grew. Its length is known only at
    its end; :meth:`windows` gives the spans :func:`worker.core.segment.segment_spans` gives
    for that length, and nothing for an empty view."""

    __slots__ = ("_pieces",)

    def __init__(self, pieces: Iterable[bytes]) -> None:
        self._pieces = iter(pieces)

    def windows(self, window: int, overlap: int) -> Iterator[tuple[tuple[int, int], bytes]]:
        """Each window ``((start, end), bytes)`` of the view, in order; at most about a window of
        the view is held. A window is given once the view is known to run past its end (so it is
        not the last), the rest when the pieces are spent."""
        step = window - overlap
        held, start = bytearray(), 0  # ``held`` is the view from ``start`` on
        for piece in self._pieces:
            held += piece
            while len(held) > window:
                yield (start, start + window), bytes(held[:window])
                del held[:step]  # bytearray drops its head without moving the rest
                start += step
        if held:  # the rest, cut as segment_spans cuts the whole from ``start`` on
            for begin, end in segment_spans(len(held), window, overlap):
                yield (start + begin, start + end), bytes(held[begin:end])


Sliceable = bytes | bytearray | Spliced  # a view held whole: ``len`` and slices, as a reviewer reads it
View = Sliceable | Deslugged | Streamed  # a view as a model reads it

RAW, ADDED, UNENCODED, REFERENCES, FOLDED = "raw", "added", "unencoded", "references", "folded"
ADDED_REFERENCES, ADDED_FOLDED = "added-references", "added-folded"
FIELDS_REFERENCES, FIELDS_FOLDED = "fields-references", "fields-folded"
PROSE, FIELDS, DECODED = "prose", "fields", "decoded:"


def added_view(data: bytes) -> bytes:
    """What a release adds: a unified diff without its removed lines (headers, hunk lines, context
    and added lines kept); anything that is not a diff, as it is. A release that deletes a clipper
    is not a clipper, so a model trained on this view never reads removed code. The base64 body
    of an inline source map (``//# sourceMappingURL=data:application/json;base64,...``) is left
    out too: a bundler's copy of the sources it was built from, which a model read as an encoded
    payload (two real releases, parse-imports 3.0.0 and @cucumber/ci-environment, blocked on it).
    The pre-check still decodes and scans it."""
    view = _added(data)
    return view if isinstance(view, bytes) else bytes(view)


_SOURCE_MAP = re.compile(
    rb"sourceMappingURL=data:[\w/.+-]{1,60}(?:;[\w.=-]{1,40}){0,3};base64,([A-Za-z0-9+/]{256,}=*)"
)


def source_map_bodies(data: bytes) -> list[tuple[int, int]]:
    """The ``[start, end)`` spans of the base64 bodies of the inline source maps in ``data``, in
    order (a body of at least 256 bytes: a short one costs a model nothing)."""
    if b"sourceMappingURL=data:" not in data:  # a plain find, 3x the regex's speed on a release
        return []
    return [match.span(1) for match in _SOURCE_MAP.finditer(data)]


def _added(data: bytes) -> bytes | Spliced:
    """:func:`added_view` without the copy: the kept pieces of ``data`` as a :class:`Spliced`."""
    diff = parse_diff(data)
    if diff is None:
        return data
    maps = source_map_bodies(data)
    if not maps:
        return _without(data, diff.removed) if len(diff.removed) else data
    # a body inside a removed line is cut once
    return _without(data, merged_spans([(int(start), int(end)) for start, end in diff.removed] + maps))


def scanned_views(data: bytes, added_only: bool = False, prose: bool = False) -> Iterator[tuple[str, View]]:
    """Every view a windowed model reads, by name, each built only when the one before is read: the
    raw bytes (or, ``added_only``, the diff without its removed lines, with the references or
    disguised letters its added lines write read as a text's are; or an e-mail without the
    encoded bodies of its text parts, :func:`unencoded_view`; or a text that spells letters as
    character references, with them read, :func:`worker.core.references.referenced_view`, or
    writes them in disguise, folded, :func:`worker.core.normalize.folded_view`), each decoded
    e-mail text part and, with ``prose``, a diff's prose, the first view read with its slugs
    written as words (:func:`deslugged`). A JSON document written in escapes, or longer than the
    answers the models were trained on, is read as its fields instead
    (:func:`worker.core.fields.json_fields`): they hold all its text, without the escapes and
    syntax of the raw windows, read with their references or disguised letters as a text's are."""
    fields = json_fields(data)
    if fields is not None:
        name, strings = _fields_shown(fields) or (FIELDS, fields)
        yield name, deslugged(strings) if prose else strings
        return
    parts = text_parts(data)
    name, first = RAW, (_added(data) if added_only else data)
    if isinstance(first, Spliced):
        name, first = _added_shown(data, first) or (ADDED, first)
    elif bodies := [part.body for part in parts if part.body is not None]:
        name, first = UNENCODED, _without(data, bodies)
    elif len(data) <= MAPPED_VIEW_BYTES and (read := referenced_view(data)) is not None:
        name, first = REFERENCES, read
    elif len(data) <= MAPPED_VIEW_BYTES and (plain := folded_view(data)) is not None:
        name, first = FOLDED, plain
    yield name, deslugged(first) if prose else first
    del first
    for index, part in enumerate(parts):
        yield f"{DECODED}{index}", _readable(part.text)
    if prose:
        pieces = prose_pieces(data)
        if (head := next(pieces, None)) is not None:
            yield PROSE, Streamed(chain((head,), pieces))


# A text with its references read or its disguised letters folded is a copy as long as the text:
# longer ones (a release, not a message or a page) are read raw, so memory stays flat; the
# pre-check reads them either way.
MAPPED_VIEW_BYTES = 16 << 20


def _added_shown(data: bytes, added: Spliced) -> tuple[str, Mapped] | None:
    """A diff's ``added`` view with its character references read (``added-references``) or its
    disguised letters folded (``added-folded``), where the lines it adds write them so, as a text
    that is not such a diff is read (:func:`worker.core.references.referenced_view`,
    :func:`worker.core.normalize.folded_view`); named by the raw bytes through the added view.
    Whether the diff writes any is read on its raw bytes first (no copy of the view otherwise)."""
    if len(data) > MAPPED_VIEW_BYTES or not (spells_letters(data) or writes_disguised(data)):
        return None
    return _shown(bytes(added), added, (ADDED_REFERENCES, ADDED_FOLDED))


def _fields_shown(fields: Fields | bytes) -> tuple[str, Mapped] | None:
    """A JSON document's ``fields`` read the same way (``fields-references``, ``fields-folded``),
    where its strings spell letters or write them in disguise (``\\uff49`` escapes undone are
    fullwidth letters); named by the raw bytes through the fields. A view that lost its map to the
    document (:meth:`Fields.build`) is read as it is."""
    if not isinstance(fields, Fields) or len(fields) > MAPPED_VIEW_BYTES:
        return None
    return _shown(fields, fields, (FIELDS_REFERENCES, FIELDS_FOLDED))


def _shown(text: bytes, through: Spliced | Fields, names: tuple[str, str]) -> tuple[str, Mapped] | None:
    """``text`` with its references read, else its disguised letters folded, named ``names[0]`` or
    ``names[1]``, its offsets read through ``through`` to the raw bytes; None where it has neither."""
    for name, read in zip(names, (referenced_view, folded_view), strict=True):
        if (shown := read(text)) is not None:
            shown.through = through
            return name, shown
    return None


def _readable(text: bytes) -> bytes:
    """A decoded e-mail part as a model reads it: with its references read, or its disguised
    letters written plainly, where it writes them so (:class:`worker.core.offsets.Mapped`)."""
    if len(text) > MAPPED_VIEW_BYTES:
        return text
    return referenced_view(text) or folded_view(text) or text


def unencoded_view(data: bytes) -> bytes | Spliced:
    """An e-mail without the encoded bodies of the text parts it is also read as, decoded
    (:func:`worker.core.mail.text_parts`): its headers, boundaries and any other part, as they stand;
    anything else, as it is."""
    bodies = [part.body for part in text_parts(data) if part.body is not None]
    return _without(data, bodies) if bodies else data


def _without(data: bytes, spans: npt.ArrayLike) -> Spliced:
    """``data`` without the ``[start, end)`` ``spans`` (in order, apart) as a :class:`Spliced`."""
    cuts = np.asarray(spans, dtype=np.int64).reshape(-1, 2)
    kept = np.empty((len(cuts) + 1, 2), dtype=np.int64)  # the gaps between the cut spans
    kept[0, 0], kept[1:, 0] = 0, cuts[:, 1]
    kept[:-1, 1], kept[-1, 1] = cuts[:, 0], len(data)
    return Spliced(data, kept)


def deslugged(view: Sliceable) -> Sliceable | Deslugged:
    """``view`` read with its slug runs written as words (:class:`worker.core.slugs.Deslugged`), or
    ``view`` itself where it has none."""
    read = Deslugged(view, slug_runs(view.pieces() if isinstance(view, Spliced) else (view,)))
    return read if read else view


def raw_span(view: View, start: int, end: int) -> tuple[int, int] | None:
    """Where the bytes ``[start, end)`` of ``view`` lie in the artifact's raw bytes, first to last
    (removed lines between them included), for a view that is raw bytes with some left out (a
    diff's ``added`` view), a JSON document's ``fields`` (:meth:`worker.core.fields.Fields.raw_span`)
    or a text read with its references or disguised letters written plainly
    (:meth:`worker.core.offsets.Mapped.raw_span`), either read as it is or with its slugs as words;
    ``None`` for any other view, whose offsets are its own. The quorum reads a model's place against
    the rules' places in the raw bytes this way (:func:`worker.core.quorum.most_together`)."""
    base = view.view if isinstance(view, Deslugged) else view
    if isinstance(base, Fields | Mapped):
        return base.raw_span(start, end)
    if not isinstance(base, Spliced) or not start < end <= len(base):
        return None
    return base.span(start, end)


def view_bytes(data: bytes, view: str) -> Sliceable | None:
    """The view named ``view`` of ``data`` (as :func:`scanned_views` names it); ``None`` for a
    name this version does not know or a part the artifact does not have."""
    if view == RAW:
        return data
    if view == ADDED:
        return added_view(data)
    if view == UNENCODED:
        return unencoded_view(data)
    if view == REFERENCES:
        return referenced_view(data) if len(data) <= MAPPED_VIEW_BYTES else None
    if view == FOLDED:
        return folded_view(data) if len(data) <= MAPPED_VIEW_BYTES else None
    if view in (ADDED_REFERENCES, ADDED_FOLDED, FIELDS_REFERENCES, FIELDS_FOLDED):
        if view.startswith(FIELDS):
            fields = json_fields(data)
            shown = None if fields is None else _fields_shown(fields)
        else:
            added = _added(data)
            shown = None if isinstance(added, bytes) else _added_shown(data, added)
        return shown[1] if shown is not None and shown[0] == view else None
    if view == PROSE:
        return diff_prose(data)
    if view == FIELDS:
        return json_fields(data)
    index = view.removeprefix(DECODED)
    if view.startswith(DECODED) and index.isdigit():
        parts = decoded_text_parts(data)
        return _readable(parts[int(index)]) if int(index) < len(parts) else None
    return None
