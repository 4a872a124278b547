"""A JSON document written in escapes or long, read as its text: one ``path: value`` line per string.

A tool's answer is often JSON, and Python's ``json.dumps`` writes every character outside ASCII as
``\\uXXXX`` by default: a review in Russian or Chinese is, in the raw bytes, a run of escapes that
neither model can read (dev's steering instructions in ten languages other than English, escaped
in a JSON answer: 40.6 % caught against 75.6 % written plainly, ``benchmarks/json_answers.py``).
:func:`json_fields` gives such a document as its reader sees it: each string, escapes undone, on a
line ``key.path[0].name: value`` (the field's name beside its text). The models read this view
instead of the raw windows (:func:`worker.core.views.scanned_views`): every character of a JSON
document that can carry words is in a key or a string, so the view holds all of it; numbers,
booleans and nulls are left out. A key repeated in one object keeps every value (``json.loads``
would keep the last, and an earlier one could hide an order). The pre-check reads JSON through its
own layer (:func:`worker.core.decode.json_text`).

A document written without escapes is read as it is up to :data:`PLAIN_RAW_BYTES`: its raw windows
are readable, and the models were trained on JSON answers of up to that size read raw. A longer
one is read as its fields too. A long answer of many short records is mostly syntax
(``"}, {"id": 187, "snippet": "``), and the best of its many raw windows drifts up: a search tool's
64 KB answer of README paragraphs drew the lexical model's harmful vote 14 times in 30 read raw,
4 times read as its fields (``benchmarks/planted.py --kind json``: docs/measurements.md).

The view keeps where each of its strings lies in the document (:meth:`Fields.raw_span`), to the
escape: a model's window in it is named by raw offsets, as the rules name their spans, so the
quorum's ``colocate`` can tell one passage from two (:func:`worker.core.quorum.most_together`).
"""

from __future__ import annotations

import json
import re
from array import array
from bisect import bisect_right
from collections.abc import Callable, Iterator
from typing import Any

from worker.core.references import shown_references, spells_letters

MAX_BYTES = 8 << 20  # larger documents are read as raw windows only (parsed whole: ~3x its size)
# A document without escapes up to this size is read raw: the largest JSON answer the models were
# trained on (worker.training.planting.LONG_PLANTED_SIZES).
PLAIN_RAW_BYTES = 16 << 10
_OPEN = (b"{", b"[")
_LEAD = b"\xef\xbb\xbf \t\r\n"  # a byte-order mark and blanks before the document
# A \u escape of a character outside ASCII (U+0080 and above): text the raw bytes hide.
_ESCAPED = re.compile(rb"\\u(?:00[89a-fA-F]|0[1-9a-fA-F][0-9a-fA-F]|[1-9a-fA-F][0-9a-fA-F]{2})[0-9a-fA-F]")
# A JSON string token in the raw bytes (no quote outside strings in JSON), and the pieces of one.
_TOKEN = re.compile(rb'"(?:[^"\\]++|\\.)*+"', re.DOTALL)
_KEY_AFTER = re.compile(rb"[ \t\r\n]*:")
_SIMPLE = {  # json.loads' meaning; the pre-check's layer blanks some instead (decode._JSON_SIMPLE)
    b'"': b'"',
    b"\\": b"\\",
    b"/": b"/",
    b"b": b"\b",
    b"f": b"\f",
    b"n": b"\n",
    b"r": b"\r",
    b"t": b"\t",
}
_PIECE = re.compile(  # a lone backslash only at a cut piece's end
    rb"\\u(?:[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}|[0-9a-fA-F]{4})|\\.?|[^\\]+", re.DOTALL
)


class Fields(bytes):
    """:func:`json_fields`' text, which also knows where each line's string lies in the document."""

    _data: bytes
    _starts: array[int]  # where each line starts in the view
    _prefixes: array[int]  # ... its ``path: `` prefix, in bytes
    _firsts: array[int]  # where its string token starts in the document (its opening quote)
    _lasts: array[int]  # ... ends (after its closing quote)

    def raw_span(self, start: int, end: int) -> tuple[int, int] | None:
        """Where the bytes ``[start, end)`` of the view lie in the document, first to last, to the
        escape that writes each (a path reads as the start of its string, a line's break as the
        end); None for an empty or outside span."""
        if not 0 <= start < end <= len(self):
            return None
        return self._raw(start)[0], self._raw(end - 1)[1]

    def span(self, start: int, end: int) -> tuple[int, int]:
        """:meth:`raw_span` as an offset map (:class:`worker.core.offsets.OffsetMap`), for a view
        derived from this one: an empty or outside span, an empty one where its start lies."""
        found = self.raw_span(start, end)
        if found is not None:
            return found
        at = self._raw(min(max(start, 0), len(self) - 1))[0] if len(self) else 0
        return at, at

    def _raw(self, index: int) -> tuple[int, int]:
        """Where the view's byte ``index`` comes from in the document: ``[start, end)``."""
        line = bisect_right(self._starts, index) - 1
        first, last = self._firsts[line], self._lasts[line]
        into = index - self._starts[line] - self._prefixes[line]  # bytes into the value's text
        if into < 0:
            return first, first + 1
        written = 0
        for piece in _PIECE.finditer(self._data, first + 1, last - 1):
            escaped = piece.group()[:1] == b"\\"
            size = len(_text(piece.group())) if escaped else piece.end() - piece.start()
            if into < written + size:
                at = piece.start() + into - written
                return piece.span() if escaped else (at, at + 1)
            written += size
        return last - 1, last  # the line's break, after its closing quote

    @classmethod
    def build(cls, data: bytes, lines: list[tuple[str, str]]) -> Fields | bytes:
        """The view of ``lines`` (path, value) of ``data``: a :class:`Fields`, each value found as
        a string token of ``data`` in order (a token followed by ``:`` is a key)."""
        encoded = [
            (f"{path}: ".encode("utf-8", "replace"), value.encode("utf-8", "replace"))
            for path, value in lines
        ]
        view = b"\n".join(prefix + value for prefix, value in encoded)
        fields = cls(view)
        fields._data, fields._firsts, fields._lasts = data, array("q"), array("q")
        for token in _TOKEN.finditer(data):
            if not _KEY_AFTER.match(data, token.end()):
                fields._firsts.append(token.start())
                fields._lasts.append(token.end())
        if len(fields._firsts) != len(lines):  # never for JSON json.loads read: a slip loses only the map
            return view
        fields._starts, fields._prefixes = array("q"), array("q")
        at = 0
        for prefix, value in encoded:
            fields._starts.append(at)
            fields._prefixes.append(len(prefix))
            at += len(prefix) + len(value) + 1
        return fields


def reader_view(data: bytes) -> Callable[[bytes], bytes] | None:
    """How a reviewer is shown a piece of ``data``'s raw bytes as the models read it: a JSON
    document read as its fields (one :func:`json_fields` reads) with its escapes undone
    (:func:`unescaped`), a text that spells letters as character references with them written
    as characters (:func:`worker.core.references.shown_references`); ``None`` for anything else,
    shown as it is."""
    if _field_lines(data):
        return unescaped
    return shown_references if spells_letters(data) else None


def unescaped(chunk: bytes) -> bytes:
    """A piece of a JSON document's raw bytes with its string escapes undone, as the view writes
    them (a lone surrogate half as ``?``): a window named by raw offsets, shown to a reviewer."""
    return b"".join(
        piece.group() if piece.group()[:1] != b"\\" else _text(piece.group())
        for piece in _PIECE.finditer(chunk)
    )


def _text(escape: bytes) -> bytes:
    """What the view writes for one escape of :data:`_PIECE` (as ``json.loads``, then UTF-8 with
    a lone surrogate half as ``?``); an escape cut short or unknown to JSON, as it is."""
    if len(escape) == 12:  # a surrogate pair: the pattern takes a high half, then a low one
        high, low = int(escape[2:6], 16), int(escape[8:], 16)
        return chr(0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00)).encode()
    if len(escape) == 6:
        code = int(escape[2:], 16)
        return b"?" if 0xD800 <= code <= 0xDFFF else chr(code).encode()
    return _SIMPLE.get(escape[1:], escape)


class _Object(list):  # type: ignore[type-arg]
    """An object's ``(key, value)`` pairs in order, repeated keys kept (``object_pairs_hook``)."""


def json_fields(data: bytes) -> Fields | bytes | None:
    """The strings of a JSON document (or JSON Lines: one document a line) that writes text outside
    ASCII as escapes or is longer than :data:`PLAIN_RAW_BYTES`, as UTF-8 lines ``path: value``;
    None for anything else: not JSON, short and without such an escape, no string, or over
    :data:`MAX_BYTES`."""
    lines = _field_lines(data)
    return Fields.build(data, lines) if lines else None


def _field_lines(data: bytes) -> list[tuple[str, str]] | None:
    """The ``(path, value)`` strings :func:`json_fields` writes, before their map to the document
    is built (which :func:`reader_view` does not need); None or empty where it returns None."""
    if len(data) > MAX_BYTES or data[:64].lstrip(_LEAD)[:1] not in _OPEN:
        return None
    if len(data) <= PLAIN_RAW_BYTES and not _ESCAPED.search(data):
        return None
    documents = _documents(data)
    return None if documents is None else list(_strings(documents))


def _parse(data: bytes) -> Any:
    return json.loads(data, object_pairs_hook=_Object)


def _documents(data: bytes) -> list[tuple[str, Any]] | None:
    """``[("", document)]``, or for JSON Lines ``[("[0]", first), ...]``; None if not JSON."""
    try:
        return [("", _parse(data))]
    except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError
        pass
    documents: list[tuple[str, Any]] = []
    for line in data.splitlines():
        if not line.strip():
            continue
        try:
            documents.append((f"[{len(documents)}]", _parse(line)))
        except (ValueError, RecursionError):
            return None
    return documents if len(documents) > 1 else None


def _strings(documents: list[tuple[str, Any]]) -> Iterator[tuple[str, str]]:
    """Each string in document order with its path, without recursion (depth is the sender's)."""
    stack: list[tuple[str, Any]] = list(reversed(documents))
    while stack:
        path, node = stack.pop()
        if isinstance(node, str):
            yield path or "value", node
        elif isinstance(node, _Object):
            stack.extend((f"{path}.{key}" if path else key, value) for key, value in reversed(node))
        elif isinstance(node, list):
            stack.extend((f"{path}[{index}]", value) for index, value in reversed(list(enumerate(node))))
