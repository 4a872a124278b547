"""Decoded layers: what hides in base64, base32, hex, URL-encoding, escapes, quoted-printable, ROT13 or reversed text.

:func:`decode_layers` takes a normalized layer and returns every layer reachable
in at most ``max_depth`` decoding steps (base64 inside base64, ROT13 of a
base64 payload...). Encoded runs of one kind are decoded into ONE layer, each
payload mapping to the span of its encoded run in the original artifact; ROT13
and reversal apply to the whole parent with exact maps (each once: ROT13 of a
reversed text is not built, a full-size layer for a rare trick; decoded
payloads do get both).

Decoded layers are flat: newlines read as spaces, payloads end with a NUL; an e-mail body
(base64 or quoted-printable, a document) keeps its lines and is normalized as the text is.
Legitimate encodings decode to nothing scannable and are skipped early:
lockfile ``integrity: sha512-...`` hashes, ``data:image/png;base64,...`` URIs,
hex digests (binary once decoded). Only payloads that decode to text are kept.
"""

from __future__ import annotations

import csv
import html
import re
from collections.abc import Callable, Iterable, Iterator
from functools import cache

import numpy as np

from worker.core.literals import LiteralSet
from worker.core.mail import encoded_lines
from worker.core.normalize import (
    Compose,
    Layer,
    PieceBuilder,
    Pieces,
    Reverse,
    normalize,
)
from worker.core.payloads import Payload, encoded_runs
from worker.core.references import NUMERIC_REFERENCE, SPELLED_LETTERS, is_letter

__all__ = ["csv_delimiter", "csv_text", "decode_layers", "iter_decoded", "json_text"]


_ROT13 = bytes.maketrans(
    b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz",
    b"NOPQRSTUVWXYZABCDEFGHIJKLMnopqrstuvwxyzabcdefghijklm",
)
# HTML (a web page, an HTML e-mail, tool output): the text a browser shows. Inline tags split words
# without a space ("ig<b></b>nore"), character references spell letters ("&#105;gnore"); comments
# and hidden elements stay (an agent reads the source, not the rendering).
_HTML_TAG = re.compile(rb"<!--|-->|</?([a-zA-Z][a-zA-Z0-9]{0,15})(?:[\s/][^<>]{0,1024})?>")
_INLINE_TAGS = frozenset(
    b"a abbr b bdi bdo big cite code data del dfn em font i ins kbd mark q s samp small span strong sub "
    b"sup time tt u var wbr".split()
)
_HTML_MIN_MARKUP = 3  # tags or character references before a page is worth a layer
# JSON (tool output, API responses, ticket exports): a string's escapes split what it says
# ("ignore all previous\\ninstructions"); its strings are read with the escapes decoded in place.
_JSON_ESCAPE = re.compile(rb'\\(?:u([0-9a-fA-F]{4})|([nrtbf"\\/]))')
_JSON_SIMPLE = {
    b"n": b"\n",
    b"r": b"\n",
    b"t": b" ",
    b"b": b" ",
    b"f": b" ",
    b'"': b'"',
    b"\\": b"\\",
    b"/": b"/",
}
_WHOLE_TEXT = ("rot13", "reversed")


def decode_layers(layer: Layer, max_depth: int = 2) -> list[Layer]:
    """Every layer reachable from ``layer`` in at most ``max_depth`` decoding steps.

    Encoded runs of one kind are decoded into ONE layer (payloads separated by
    newlines), each payload mapping to its encoded run in the original.
    """
    return list(iter_decoded(layer, max_depth))


def iter_decoded(layer: Layer, max_depth: int = 2) -> Iterator[Layer]:
    """:func:`decode_layers` one layer at a time, in the same order (breadth first), holding only
    the parents still to decode: a scan that drops each layer once read never holds the full-size
    ROT13 and reversed copies of a window at once."""
    frontier = [layer]
    while frontier:
        parents, frontier = frontier, []
        for parent in parents:
            if parent.depth >= max_depth:
                continue
            for child in _decode_once(parent):
                yield child
                if child.depth < max_depth and child.name.rsplit("/", 1)[-1] not in _WHOLE_TEXT:
                    frontier.append(child)  # ROT13 and reversed text have no children


def _decode_once(parent: Layer) -> Iterator[Layer]:
    last = parent.name.rsplit("/", 1)[-1]
    prefix = "" if parent.depth == 0 else parent.name + "/"
    if last not in _WHOLE_TEXT:
        by_kind: dict[str, list[Payload]] = {}
        for payload in encoded_runs(parent.data):
            by_kind.setdefault(payload[0], []).append(payload)
        for kind, payloads in by_kind.items():
            builder = PieceBuilder()  # payload -> its encoded run in the parent, then the parent's map
            for _, start, end, decoded in payloads:  # NUL keeps rules from matching across payloads
                if kind in _DOCUMENTS:
                    _add_document(builder, kind, parent.data, start, end, decoded)
                else:
                    builder.add(b" ".join(decoded.split()) + b"\x00", start, end, False)
            data, pieces = builder.build()
            yield Layer(prefix + kind, data, Compose(pieces, parent.offsets), parent.depth + 1)
        if parent.depth == 0 and (page := _html_text(parent)) is not None:
            yield page
        yield Layer(prefix + "rot13", parent.flat.translate(_ROT13), parent.offsets, parent.depth + 1)
    if (
        last not in _WHOLE_TEXT
    ):  # reversal of a ROT13'd artifact is left out: a full-size layer for a rare trick
        flipped = Reverse(parent.offsets, len(parent.data))
        backwards = np.frombuffer(parent.flat, dtype=np.uint8)[::-1].tobytes()  # 2x faster than [::-1]
        yield Layer(prefix + "reversed", backwards, flipped, parent.depth + 1)


# Encodings that carry a whole document (an e-mail body): decoded, it is text with lines, read as
# the artifact's own text is (normalized, line rules and all), not a payload hidden in it. Its text
# maps to the encoded lines that write it, in pieces of about this many decoded bytes (each ending at
# a line's end): a rule's hit points at a passage of the body, not at the whole body.
_DOCUMENTS = frozenset({"mime-base64", "quoted-printable"})
DOCUMENT_PIECE = 1024


def _add_document(
    builder: PieceBuilder, kind: str, data: bytes, start: int, end: int, decoded: bytes
) -> None:
    """Add the document ``decoded`` from ``data[start:end]`` to ``builder``: on a line of its own,
    normalized (:func:`worker.core.normalize.normalize`) with its lines kept, a NUL after it, each
    piece of it mapped to the encoded lines that write it; the whole to the whole run where its
    lines decoded one by one are not ``decoded``."""
    lines = encoded_lines(data[start:end], "base64" if kind == "mime-base64" else kind, decoded, start)
    if lines is None:
        builder.add(b"\n" + normalize(decoded).data + b"\x00", start, end, False)
        return
    begin, lead = 0, b"\n"
    while begin < len(decoded):
        stop = decoded.find(b"\n", begin + DOCUMENT_PIECE)
        stop = len(decoded) if stop < 0 else stop + 1
        text = normalize(decoded[begin:stop]).data
        builder.add(lead + (text.lstrip() if begin else text), *lines.span(begin, stop), False)
        begin, lead = stop, b""
    builder.add(b"\x00", end, end, False)


def _rewrite(
    data: bytes,
    marks: Iterable[re.Match[bytes]],
    between: Callable[[bytes], bytes],
    at: Callable[[re.Match[bytes]], bytes],
) -> tuple[bytes, Pieces]:
    """``data`` with each match in ``marks`` replaced by ``at(match)`` and the text between matches
    by ``between(text)``. Every piece maps to its own span of ``data``; one of unchanged length maps
    byte for byte."""
    builder = PieceBuilder()

    def keep(start: int, stop: int) -> None:
        run = data[start:stop]
        out = between(run)
        builder.add(out, start, stop, len(out) == len(run))

    position = 0
    for mark in marks:
        keep(position, mark.start())
        builder.add(at(mark), mark.start(), mark.end(), False)
        position = mark.end()
    keep(position, len(data))
    return builder.build()


def _html_text(parent: Layer) -> Layer | None:
    """The text of an HTML document: tags dropped (a space for a block tag, nothing for an inline
    one), character references decoded; each text run maps to its own span of the original."""
    data = parent.data
    # Cheap gates first (one-byte searches are memchr-fast; each longer one costs ~1 ms per MB):
    # closing tags or a comment where there is a "<", numeric references where "&" is frequent
    # (found from the ampersands' positions: one vector pass instead of a count and a search).
    lt = b"<" in data
    codes = np.frombuffer(data, dtype=np.uint8)
    at = np.flatnonzero(codes == 38)  # '&'
    ampersands = len(at)
    markup = lt and _has_markup(data)
    after = at[at + 1 < len(data)] + 1
    references = ampersands >= SPELLED_LETTERS and bool((codes[after] == 35).any())  # '&#'
    if not (markup or references):
        return None
    tags = list(_HTML_TAG.finditer(data)) if lt else []
    if len(tags) + ampersands < _HTML_MIN_MARKUP:
        return None
    text, pieces = _rewrite(
        data,
        tags,
        lambda run: (
            html.unescape(run.decode("utf-8", errors="replace")).encode("utf-8") if b"&" in run else run
        ),
        lambda tag: b"" if (tag.group(1) or b"").lower() in _INLINE_TAGS else b" ",
    )
    if text == data:
        return None
    # Markup is a transport ("html-text", judged as plain text); letters spelled as "&#105;" hide
    # words from a reader of the source: that layer is a decoded payload ("html-entities").
    spelled = sum(1 for m in NUMERIC_REFERENCE.finditer(data) if is_letter(m))
    name = "html-entities" if spelled >= SPELLED_LETTERS else "html-text"
    return Layer(name, text, Compose(pieces, parent.offsets), parent.depth + 1)


# Closing tags and comments, found in one pass: a count of "</" and a search for "<!--" were two
# (~1 ms per MB each, 2 % of the pre-check on real diffs, most of which hold a "<" somewhere).
_MARKUP_GATE = LiteralSet((b"</", b"<!--"))


def _has_markup(data: bytes) -> bool:
    """Two closing tags or a comment (``data.count(b"</") >= 2 or b"<!--" in data``)."""
    present = _MARKUP_GATE.present(data)
    if b"<!--" in present:
        return True
    first = data.find(b"</") if b"</" in present else -1
    return first >= 0 and data.find(b"</", first + 2) >= 0  # "</" cannot overlap itself


def json_text(parent: Layer) -> Layer | None:
    """A JSON document as it reads: string escapes (``\\n``, ``\\"``, ``\\u00e9``) decoded in place and
    string delimiters blanked (a tool's answer is read, not quoted: a rule that skips quoted text
    must not skip every string of a JSON document), then normalized like the main layer
    (``\\u200b`` between letters is dropped). Each escape maps to its own span of the original;
    None when there is no string."""
    data = parent.data
    if b'"' not in data:
        return None
    # \n \r \t are blank already (precheck.unglue_escapes)
    escapes = list(_JSON_ESCAPE.finditer(data)) if b"\\" in data else []
    text, pieces = _rewrite(data, escapes, lambda run: run.replace(b'"', b" "), _json_unescape)
    read = normalize(text)
    return Layer(
        "json-text", read.data, Compose(read.offsets, Compose(pieces, parent.offsets)), parent.depth + 1
    )


def _json_unescape(escape: re.Match[bytes]) -> bytes:
    if escape.group(1):
        code = int(escape.group(1), 16)
        return b" " if 0xD800 <= code <= 0xDFFF else chr(code).encode("utf-8")  # lone surrogate halves
    return _JSON_SIMPLE[escape.group(2)]


# A CSV document (an export, a tool's table): fields split by a delimiter, and a field that holds the
# delimiter, a quote or a line break written between quotes, a quote inside it doubled. A field is a
# text of its own: read as it stands, a comment's first word follows the author's name and a comma
# (no sentence starts there), and every quoted field reads as a quotation, so a rule that skips
# quoted text (``unquoted``) skipped every comment of a ticket export with a comma in it.
_CSV_DELIMITERS = b",;\t"
CSV_SNIFF_BYTES = 8192  # how much of an artifact's start tells whether it is a CSV document


def csv_delimiter(data: bytes) -> bytes | None:
    """The delimiter of ``data`` if it starts as a CSV document, else None: a header of two fields or
    more, split by the delimiter (``,`` ``;`` or tab) that line holds most of and mostly without a
    space after it, then at least two rows, four in five of which have as many fields (the rows in
    the first :data:`CSV_SNIFF_BYTES`, the last one cut there not counted). Code, prose and JSON do
    not read so: their lines' commas do not line up, or a space follows them."""
    head = data[:CSV_SNIFF_BYTES]
    first = head.split(b"\n", 1)[0]
    if not first.strip() or first.lstrip()[:1] in (b"{", b"[", b"<", b"#"):
        return None
    delimiter = bytes([max(_CSV_DELIMITERS, key=first.count)])
    if delimiter not in first or first.count(delimiter + b" ") * 2 > first.count(delimiter):
        return None  # prose puts a space after its commas, a CSV writer does not
    lines = head.decode("utf-8", errors="replace").splitlines()
    rows = [row for row in csv.reader(lines, delimiter=delimiter.decode()) if row]
    if len(data) > CSV_SNIFF_BYTES:
        rows = rows[:-1]
    if len(rows) < 3 or len(rows[0]) < 2:
        return None
    body = rows[1:]
    return delimiter if sum(len(row) == len(rows[0]) for row in body) * 5 >= len(body) * 4 else None


def csv_text(raw: bytes, base: int, delimiter: bytes) -> Layer:
    """A CSV document (``raw``, found at byte ``base`` of the original) read as its fields, each on a
    line of its own: every ``delimiter`` and every quote around a field a line break (a field starts
    its text as a line does), doubled quotes read as one (a ``"`` and a space). Rewritten before it
    is normalized, as the main layer is: normalizing turns a tab into a space."""
    # One step per quoted field, the delimiters between them replaced in one pass each; a callback
    # per delimiter, and a field pattern that tried an alternation at every byte, made the
    # pre-check of a 150 KB export 7x slower than before the export was read as its fields.
    parts: list[bytes] = []
    at = 0
    for field in _quoted_fields(delimiter).finditer(raw):
        inner = field.group(1).replace(b'""', b'" ')
        parts += (raw[at : field.start()].replace(delimiter, b"\n"), b"\n", inner, b"\n")
        at = field.end()
    parts.append(raw[at:].replace(delimiter, b"\n"))
    read = normalize(b"".join(parts), base=base)  # the same length as ``raw``: every byte keeps its place
    return Layer("csv-text", read.data, read.offsets, 1)


@cache
def _quoted_fields(delimiter: bytes) -> re.Pattern[bytes]:
    """A quoted field: at a field's start, up to the quote before a delimiter or a line's end."""
    d = re.escape(delimiter)
    return re.compile(rb"(?<![^" + d + rb'\n])"([^"]*(?:""[^"]*)*)"(?=[' + d + rb"\r\n]|\Z)")
