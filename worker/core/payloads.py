"""Encoded payloads: the runs of a layer that decode to text, and what each decodes to.

:func:`encoded_runs` finds base64, base32, hex, URL-encoded, escaped, char-code, binary,
quoted-printable and MIME base64 runs, each as ``(kind, start, end, decoded)``; only payloads
that decode to text are kept. Legitimate encodings decode to nothing scannable and are skipped
early: lockfile ``integrity: sha512-...`` hashes, ``data:image/png;base64,...`` URIs, hex
digests (binary once decoded). :mod:`worker.core.decode` turns the runs into layers.
"""

from __future__ import annotations

import base64
import binascii
import codecs
import re
from urllib.parse import unquote_to_bytes

import numpy as np
import numpy.typing as npt

from worker.core.literals import LiteralSet
from worker.core.normalize import byte_mask, clusters

__all__ = ["Payload", "encoded_runs"]

_HEX_RUN = re.compile(rb"[0-9a-fA-F]+")
_BASE32_RUN = re.compile(rb"[A-Z2-7]+")
_PRINTABLE = bytes(range(32, 127)) + b"\t\n\r" + bytes(range(128, 256))
_LETTERS = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_HASH_PREFIXES = (
    (b"sha1-", 27),
    (b"sha256-", 43),
    (b"sha384-", 64),
    (b"sha512-", 86),
    (b"md5-", 22),
)  # digits
_BINARY_URI = re.compile(
    rb"data:(?:image|font|audio|video|application/(?:octet-stream|x-font|font|pdf|zip|wasm))"
)
_ESCAPES = re.compile(
    rb"\\(?:x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4})(?:[^\"'\n\\]{0,3}\\(?:x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}))+"
)
_CHAR_CODES = (  # literal prefixes let the regex engine skip ahead
    re.compile(rb"fromCharCode\(\s*(\d{2,3}(?:\s*,\s*\d{2,3}){7,})\s*\)"),
    re.compile(rb"\[\s*(\d{2,3}(?:\s*,\s*\d{2,3}){7,})\s*\]"),
)
_BITS = re.compile(rb" [01]{8}(?:[ ,]?[01]{8}){5,}")
# An e-mail (part) declared quoted-printable: its soft line breaks ("=" at a line end) split words
# and phrases ("outside-=\nexample.net", "A=\nLWAYS"), so the body is decoded whole from there on.
_QP_HEADER = re.compile(rb"content-transfer-encoding:[ \t]*quoted-printable", re.IGNORECASE)
# A MIME part declared base64 (the body of many e-mails) is a transport too: its text is judged as
# text ("mime-base64"), not as a payload that only appears once decoded. Whitespace runs are one
# byte by now, so the blank line after the part's headers is a single newline.
_MIME_BASE64 = re.compile(
    rb"content-transfer-encoding:[ \t]*base64[ \t]*\n(?:[\w-]+:[^\n]*\n)*((?:[A-Za-z0-9+/]+=*[ \t]*\n?)+)",
    re.IGNORECASE,
)

Payload = tuple[str, int, int, bytes]  # kind, start, end (in the parent layer), decoded bytes


def _textual(payload: bytes) -> bool:
    """Decoded bytes worth scanning: valid UTF-8, almost no control bytes, some letters."""
    if len(payload) < 6:
        return False
    try:
        payload.decode("utf-8")
    except UnicodeDecodeError:
        return False
    junk = len(payload.translate(None, _PRINTABLE))
    letters = len(payload) - len(payload.translate(None, _LETTERS))
    return junk * 20 <= len(payload) and letters * 4 >= len(payload)


# What encoded_runs looks for before running a regex or a decoder, found in one pass.
_GATES = LiteralSet(
    (b"ase64", b"\\", b"fromCharCode", b"[", b" 0110", b"=\n", b"uoted-printable", b"UOTED-PRINTABLE")
)


# A MIME part's header, in any case: the MIME regex (case-insensitive, so without a literal to jump
# to) read every byte of every layer that says "base64" (code does), about 15 us per KB.
_MIME_GATE = LiteralSet((b"content-transfer-encoding:",), caseless=True)


def encoded_runs(data: bytes) -> list[Payload]:
    """Every encoded run in ``data`` that decodes to text."""
    arr = np.frombuffer(data, dtype=np.uint8)
    runs = _alphabet_runs(data, arr)
    gates = _GATES.present(data)  # the regexes below then jump between their literal prefixes
    # a MIME body is read whole, not line by line
    if b"ase64" in gates and _MIME_GATE.present(data) and (bodies := _mime_bodies(data)):
        runs = [r for r in runs if not any(b[1] <= r[1] < b[2] for b in bodies)] + bodies
    percents = np.flatnonzero(arr == 37)  # '%'
    if len(percents) >= 4:
        runs += _percent_runs(data, arr, percents)
    if b"\\" in gates:
        runs += [("escapes", m.start(), m.end(), _unescape(m.group())) for m in _ESCAPES.finditer(data)]
    for pattern, gate in zip(_CHAR_CODES, (b"fromCharCode", b"["), strict=True):
        if gate in gates:
            runs += [
                ("charcodes", m.start(), m.end(), _char_codes(m.group(1))) for m in pattern.finditer(data)
            ]
    if b" 0110" in gates:
        runs += [("binary", m.start() + 1, m.end(), _bits(m.group())) for m in _BITS.finditer(data)]
    if b"=\n" in gates and (b"uoted-printable" in gates or b"UOTED-PRINTABLE" in gates):
        declared = _QP_HEADER.search(data)
        if declared is not None:
            runs.append(
                ("quoted-printable", declared.end(), len(data), binascii.a2b_qp(data[declared.end() :]))
            )
    return [run for run in runs if _textual(run[3])]


def _alphabet_runs(data: bytes, arr: npt.NDArray[np.uint8], min_len: int = 20) -> list[Payload]:
    """Runs of the base64 alphabet: all-hex runs decode as hex, upper-case base32 runs that decode to
    text as base32, the rest as base64."""
    if len(data) < min_len:
        return []
    starts, ends = _long_runs(_in_base64_alphabet(arr), min_len)
    found: list[Payload] = []
    unhashed = ~_hash_runs(data, starts, ends)
    starts, ends = starts[unhashed], ends[unhashed]
    maybe = _maybe_text(data, starts.tolist(), ends.tolist())
    for start, end in zip(starts[maybe].tolist(), ends[maybe].tolist(), strict=True):
        head = data[max(0, start - 120) : start]
        if head.endswith(b";base64,") and _BINARY_URI.search(head):
            continue  # images and fonts inlined as data URIs
        run = data[start:end]
        for prefix, _ in _HASH_PREFIXES:  # a "hash" that is really text: decode what follows the prefix
            if run.startswith(prefix):
                start, run = start + len(prefix), run[len(prefix) :]
        if _HEX_RUN.fullmatch(run):
            if len(run) >= 32:
                found.append(("hex", start, end, bytes.fromhex(run[: len(run) // 2 * 2].decode())))
            continue
        tail = data[end : end + 6]
        padding = len(tail) - len(tail.lstrip(b"="))  # up to 6 '=' for base32, 2 for base64
        if _BASE32_RUN.fullmatch(run) and (text := _b32(run)):  # upper-case letters and 2-7 only
            found.append(("base32", start, end + padding, text))
            continue
        found.append(("base64", start, end + min(padding, 2), _b64(run)))
    return found


_JUNK = np.frombuffer(byte_mask(bytes(sorted(set(range(256)) - set(_PRINTABLE)))), dtype=bool)
_LETTER = np.frombuffer(byte_mask(_LETTERS), dtype=bool)
_HEX_OR_BASE32 = b"0123456789abcdefABCDEFGHIJKLMNOPQRSTUVWXYZ"  # deleted: what is left is neither
_URL_SAFE = bytes.maketrans(b"-_", b"+/")


def _maybe_text(data: bytes, starts: list[int], ends: list[int]) -> npt.NDArray[np.bool_]:
    """False for each run sure to be base64 that does not decode to text (most runs in code are
    identifiers and paths): its decoded bytes hold too many control bytes or too few letters
    for ``_textual``. The rest go the per-run path, which decodes them one at a time (it did all
    of them: 7 % of the pre-check on real diffs).

    A run is "sure to be base64" when it holds a character that is neither hex nor base32 and
    does not start like a hash prefix (``sha512-``, ``md5-``): the per-run path would decode it as
    base64 whole. The whole 4-character groups of all such runs are decoded in one call; a run's
    tail (1 or 2 decoded bytes) is counted as letters and never as junk, so only runs the per-run
    path would drop are dropped.
    """
    maybe = np.ones(len(starts), dtype=bool)
    runs = [data[s:e] for s, e in zip(starts, ends, strict=True)]
    sure = [
        i
        for i, run in enumerate(runs)
        if run[:3] not in (b"sha", b"md5") and run.translate(None, _HEX_OR_BASE32)
    ]
    if not sure:
        return maybe
    whole = [len(runs[i]) // 4 * 4 for i in sure]
    quanta = b"".join([runs[i][:n] for i, n in zip(sure, whole, strict=True)])
    decoded = np.frombuffer(binascii.a2b_base64(quanta.translate(_URL_SAFE)), dtype=np.uint8)
    sizes = np.array(whole, dtype=np.int64) // 4 * 3
    offsets = np.cumsum(sizes) - sizes
    junk = np.add.reduceat(_JUNK[decoded], offsets, dtype=np.int64)
    letters = np.add.reduceat(_LETTER[decoded], offsets, dtype=np.int64)
    tail = np.array([0, 0, 1, 2], dtype=np.int64)[[len(runs[i]) % 4 for i in sure]]
    size = sizes + tail
    maybe[sure] = (junk * 20 <= size) & ((letters + tail) * 4 >= size)
    return maybe


def _mime_bodies(data: bytes) -> list[Payload]:
    """The bodies of MIME parts declared base64, each decoded whole (its lines are one payload)."""
    return [
        ("mime-base64", m.start(1), m.end(1), _b64(b"".join(m.group(1).split())))
        for m in _MIME_BASE64.finditer(data)
    ]


def _in_base64_alphabet(arr: npt.NDArray[np.uint8]) -> npt.NDArray[np.bool_]:
    """``A-Z a-z 0-9 + / - _`` as a mask: a few SIMD compares, cheaper than a lookup table."""
    inside = (arr | np.uint8(0x20)) - np.uint8(97) < 26  # letters (uint8 wraps around below 'a')
    inside |= arr - np.uint8(48) < 10  # digits
    for char in b"+/-_":
        inside |= arr == char
    return inside


def _long_runs(
    mask: npt.NDArray[np.bool_], length: int
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """``[start, end)`` of every maximal run of ``mask`` at least ``length`` long.

    Erosion by doubling: after it, ``hits[i]`` says ``mask[i:i+length]`` is all
    true; consecutive hits belong to one run.
    """
    hits, width = mask, 1
    while width * 2 <= length:
        hits, width = hits[:-width] & hits[width:], width * 2
    if width < length:
        hits = hits[: width - length] & hits[length - width :]
    at = np.flatnonzero(hits)
    if not len(at):
        return at, at
    firsts, lasts = clusters(at)
    return at[firsts].astype(np.int64), (at[lasts] + length).astype(np.int64)


_HASHES = [(prefix, np.frombuffer(prefix, dtype=np.uint8), digits) for prefix, digits in _HASH_PREFIXES]
# The prefixes in a layer, found in one pass: ``prefix in data`` for each of the five was five passes,
# ~20 us each on a 21 KB diff (3 % of the pre-check on real diffs, where two in 812 hold one).
_HASH_GATE = LiteralSet(tuple(prefix for prefix, _ in _HASH_PREFIXES))
_CONTROL_BYTE = np.frombuffer(byte_mask(bytes(range(9)) + bytes(range(11, 32)) + b"\x7f"), dtype=bool)


def _hash_runs(
    data: bytes, starts: npt.NDArray[np.int64], ends: npt.NDArray[np.int64]
) -> npt.NDArray[np.bool_]:
    """Runs that are genuine integrity hashes (``sha512-`` + a digest that decodes to non-text).

    Lockfiles hold thousands; they are checked in one batch (one base64 decode,
    one vectorized test: a random digest almost surely holds a control byte,
    text never does), so a text payload dressed as a hash is still decoded
    while real digests cost almost nothing.
    """
    arr = np.frombuffer(data, dtype=np.uint8)
    genuine = np.zeros(len(starts), dtype=bool)
    present = _HASH_GATE.present(data) if len(starts) else frozenset()
    for prefix, head, digits in _HASHES:
        if prefix not in present:  # no run starts with it (the batch below is ~20 us)
            continue
        sized = np.flatnonzero(ends - starts == len(head) + digits)  # the length first: few runs have it
        index = np.minimum(starts[sized, None] + np.arange(len(head)), len(arr) - 1)
        candidates = sized[np.all(arr[index] == head, axis=1)]
        if not len(candidates):
            continue
        aligned = digits - digits % 4  # decode whole quanta only: padding mid-stream would stop the decoder
        encoded = b"".join(data[s + len(head) : s + len(head) + aligned] for s in starts[candidates].tolist())
        rows = np.frombuffer(
            base64.b64decode(encoded.replace(b"-", b"+").replace(b"_", b"/")), dtype=np.uint8
        )
        genuine[candidates[_CONTROL_BYTE[rows.reshape(len(candidates), -1)].any(axis=1)]] = True
    return genuine


def _b32(run: bytes) -> bytes:
    """Base32 text (RFC 4648), or b"" when ``run`` is not a whole number of 8-character groups of text."""
    try:
        decoded = base64.b32decode(run + b"=" * (-len(run) % 8))
    except (binascii.Error, ValueError):
        return b""
    return decoded if _textual(decoded) else b""


def _b64(run: bytes) -> bytes:
    run = run.replace(b"-", b"+").replace(b"_", b"/")
    run = run[: len(run) - len(run) % 4] if len(run) % 4 == 1 else run + b"=" * (-len(run) % 4)
    try:
        return base64.b64decode(run)
    except (binascii.Error, ValueError):
        return b""


_HEX_DIGIT = np.frombuffer(byte_mask(b"0123456789abcdefABCDEF"), dtype=bool)


def _percent_runs(data: bytes, arr: npt.NDArray[np.uint8], percents: npt.NDArray[np.intp]) -> list[Payload]:
    """Clusters of at least four %XX escapes (each within 24 bytes of the previous one)."""
    percents = percents[percents + 2 < len(arr)]
    starts = percents[_HEX_DIGIT[arr[percents + 1]] & _HEX_DIGIT[arr[percents + 2]]]
    if len(starts) < 4:
        return []
    firsts, lasts = clusters(starts, gap=24)
    found: list[Payload] = []
    for first, last in zip(firsts.tolist(), lasts.tolist(), strict=True):
        if last - first + 1 >= 4:
            s, e = int(starts[first]), int(starts[last]) + 3
            found.append(("url", s, e, unquote_to_bytes(data[s:e].replace(b"+", b" "))))
    return found


def _unescape(run: bytes) -> bytes:
    try:
        return str(codecs.decode(run.decode("latin-1"), "unicode_escape")).encode("utf-8", "replace")
    except (UnicodeDecodeError, ValueError):
        return b""


def _char_codes(numbers: bytes) -> bytes:
    values = [int(n) for n in re.split(rb"\s*,\s*", numbers.strip())]
    return "".join(map(chr, values)).encode("utf-8") if max(values) < 0x110000 else b""


def _bits(run: bytes) -> bytes:
    digits = re.sub(rb"[^01]", b"", run)
    return bytes(int(digits[i : i + 8], 2) for i in range(0, len(digits) - 7, 8))
