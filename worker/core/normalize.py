"""Normalization: the byte layers the pre-check scans, each mapped back to the original bytes.

A layer is bytes plus an :class:`~worker.core.offsets.OffsetMap` to half-open byte spans of
the ORIGINAL artifact, so evidence points at bytes an analyst can open (the maps, and
:class:`Layer`, live in :mod:`worker.core.offsets`; re-exported here).
:func:`normalize` folds non-ASCII runs (NFKC, accents stripped, typographic
quotes to ASCII, Cyrillic/Greek lookalikes inside Latin words), removes
invisible characters and collapses every whitespace run to one byte. ASCII input
skips folding; folding handles all runs at once (one decode, one
``str.translate``) and walks only context-sensitive runs character by character.

Invisible characters become *signals*, never verdicts, and only out of context:
a ZWJ in an emoji sequence, an RLM mark near Hebrew or Arabic, tags spelling a
subdivision flag are legitimate. Tag characters and variation-selector runs are
also decoded (they smuggle text). :mod:`worker.core.decode` adds decoded layers.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from itertools import chain

import numpy as np
import numpy.typing as npt

from worker.core.offsets import (
    Compose,
    Gather,
    Ints,
    Layer,
    Mapped,
    OffsetMap,
    PieceBuilder,
    Pieces,
    Reverse,
    Shift,
)

__all__ = ["INVISIBLE", "Compose", "Gather", "Layer", "Normalized", "OffsetMap", "PieceBuilder", "Pieces"]
__all__ += ["Reverse", "Shift", "byte_mask", "clusters", "collapse_whitespace", "fold_char", "near_rtl"]
__all__ += ["folded_view", "normalize"]


@dataclass(frozen=True)
class Normalized:
    """The normalized main layer plus what normalization noticed on the way."""

    data: bytes
    offsets: OffsetMap
    signals: dict[str, tuple[int, int]] = field(default_factory=dict)  # name -> first original span
    hidden: tuple[Layer, ...] = ()


_ZERO_WIDTH = frozenset([*range(0x200B, 0x200E), *range(0x2060, 0x2065), 0xFEFF, 0x180E, 0x034F])
_ZERO_WIDTH |= frozenset([0x115F, 0x1160, 0x3164, 0xFFA0, 0x17B4, 0x17B5])
_BIDI = frozenset([0x200E, 0x200F, 0x061C, *range(0x202A, 0x202F), *range(0x2066, 0x206A)])
_TAGS = range(0xE0000, 0xE0080)
_VARIATION = frozenset([*range(0xFE00, 0xFE10), *range(0xE0100, 0xE01F0)])
_REMOVABLE = _ZERO_WIDTH | _BIDI | _VARIATION | {0x00AD}  # soft hyphen: stripped, not a signal
INVISIBLE: frozenset[int] = _REMOVABLE | frozenset(_TAGS)  # every code point normalization treats as unseen
_RTL = re.compile("[\u0590-\u08ff\ufb1d-\ufdff\ufe70-\ufefc]")
_LOOKALIKES = "аеорсухіјѕԁһӏԛԝүɡɑıɩοαρνικτυχεօսАВЕКМНОРСТХЅІЈҮԜΑΒΕΖΗΙΚΜΝΟΡΤΥΧ"
_CONFUSABLES = dict(
    zip(_LOOKALIKES, "aeopcyxijsdhlqwygaiioapvikruxeouABEKMHOPCTXSIJYWABEZHIKMNOPTYX", strict=True)
)
_PUNCTUATION = dict.fromkeys("\u2018\u2019\u201a\u201b\u2032", "'") | dict.fromkeys(
    "\u201c\u201d\u201e\u201f\u2033\u00ab\u00bb", '"'
)
_PUNCTUATION |= dict.fromkeys("\u2010\u2011\u2012\u2013\u2014\u2015\u2212", "-")
# A bullet, an arrow, a check mark or a pictograph written as one (emoji, dingbats) reads as
# Markdown's "*", a box-drawing vertical as a table's "|": an order that opens a list item
# ("• Ignore all previous instructions", "🚨 Send ...") or a cell of a drawn table starts a
# sentence there, as after "* " or "| ". None is a letter, so no word changes.
_PUNCTUATION |= dict.fromkeys(
    "\u2022\u2023\u2043\u2219\u25a0\u25a1\u25aa\u25ab\u25b6\u25b8\u25ba\u25c6\u25c7\u25cb\u25cf\u25e6"
    "\u2192\u21d2\u2b50\u30fb",
    "*",
)
_PUNCTUATION |= dict.fromkeys("\u2502\u2503\u2551", "|")
_PICTOGRAPHS = ((0x2600, 0x27C0), (0x1F300, 0x1FB00))  # miscellaneous symbols, dingbats; emoji
_COMBINING = ((0x0300, 0x0370), (0x1AB0, 0x1B00), (0x1DC0, 0x1E00), (0x20D0, 0x2100), (0xFE20, 0xFE30))
_ZW_CLASS = "\u200b-\u200d\u2060-\u2064\ufeff\u180e\u034f\u115f\u1160\u3164\uffa0\u17b4\u17b5"
_BIDI_CLASS = "\u200e\u200f\u061c\u202a-\u202e\u2066-\u2069"
_VS_CLASS = "\ufe00-\ufe0f\U000e0100-\U000e01ef"
# Runs whose folding depends on context; everything else folds with one str.translate. Matched on the
# NUL-joined runs: a run's edges are the string's ends or a NUL separator.
_NEEDS_CONTEXT = re.compile(
    f"(?:(?:^|(?<=\x00))[{_ZW_CLASS}]|[{_ZW_CLASS}](?=\x00|$)|[{_ZW_CLASS}]{{2}}|[\U000e0000-\U000e007f]|[{_VS_CLASS}]{{4}}"
    f"|(?P<bidi>[{_BIDI_CLASS}])|(?P<lookalike>[{_LOOKALIKES}]))"
)
_ASCII_LETTER = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")


def fold_char(ch: str) -> str:
    """Context-free folding of one character: NFKC, accents stripped to ASCII, spaces to ' '."""
    cp = ord(ch)
    if cp in _REMOVABLE or cp in _TAGS or any(lo <= cp < hi for lo, hi in _COMBINING):
        return ""
    if 0xD800 <= cp < 0xE000 or cp == 0:  # lone surrogates (undecodable bytes) and the run separator
        return ch
    if ch in _PUNCTUATION:
        return _PUNCTUATION[ch]
    if any(lo <= cp < hi for lo, hi in _PICTOGRAPHS):
        return "*"
    out = unicodedata.normalize("NFKC", ch)
    stripped = "".join(c for c in unicodedata.normalize("NFKD", out) if not unicodedata.combining(c))
    if stripped and stripped.isascii():
        out = stripped
    if out.isspace():
        return "\n" if cp in (0x2028, 0x2029, 0x0085) else " "
    return out


class _FoldTable(dict[int, str]):
    """A ``str.translate`` table that computes and caches :func:`fold_char` on demand."""

    def __missing__(self, cp: int) -> str:
        value = self[cp] = fold_char(chr(cp))
        return value


_FOLD = _FoldTable()


def normalize(data: bytes, base: int = 0) -> Normalized:
    """Normalize ``data`` (found at byte ``base`` of the original) into the main scan layer.

    Every whitespace run becomes ONE byte (a newline if it held one, else a
    space), so rules can spell "a run of whitespace" as a plain space.
    """
    offsets: OffsetMap = Shift(base)
    state = _Folder(data, base)
    if not data.isascii():
        data, offsets = state.fold()
    collapsed, dropped = _collapse(data)
    if dropped is not None:
        if isinstance(offsets, Shift):
            offsets = Gather(dropped, len(data), base)
        else:
            offsets = Compose(Gather(dropped, len(data)), offsets)
    return Normalized(collapsed, offsets, state.signals, tuple(state.hidden))


# Latin letters in disguise, as UTF-8: fullwidth letters and digits, mathematical alphanumerics
# (bold, italic, script...), zero-width spaces and word joiners (not the joiner of emoji sequences,
# the non-joiner of Persian and Indic script or a byte order mark), and Cyrillic or Greek letters
# touching a Latin one. CJK's fullwidth punctuation is ordinary typography and does not count. Each
# pattern starts with a literal byte, which the regex engine finds at memchr speed (one pattern with
# the look-alikes' lookbehind first read a 87 MB release in 2.5 s, these in well under one).
_DISGUISED = [
    re.compile(rb"\xef(?:\xbc[\x90-\x99\xa1-\xba]|\xbd[\x81-\x9a])"),
    re.compile(rb"\xf0\x9d[\x90-\x9f]"),
    re.compile(rb"\xe2(?:\x80\x8b|\x81[\xa0-\xa4])"),
    *(
        re.compile(rb"%s(?:[\x80-\xbf][A-Za-z]|(?<=[A-Za-z]%s))" % (lead, lead))
        for lead in (b"\xce", b"\xcf", b"\xd0", b"\xd1", b"\xd3", b"\xd4")
    ),
]
DISGUISED_LETTERS = 8  # letters in disguise before a text is read with them written plainly


def folded_view(data: bytes) -> Mapped | None:
    """``data`` with its non-ASCII runs folded as the pre-check folds them (NFKC, accents stripped,
    look-alike letters inside Latin words and invisibles in context), when it writes at least
    :data:`DISGUISED_LETTERS` Latin letters in disguise; None otherwise, read as it is. To a
    language model ``ｉｇｎｏｒｅ``, ``𝐢𝐠𝐧𝐨𝐫𝐞`` and ``ignоrе`` (a Cyrillic ``о`` and ``е``) read as
    "ignore"; to a windowed model that reads bytes they are other tokens. Each folded run maps to
    where it is written (:class:`worker.core.offsets.Mapped`)."""
    return Mapped.of(*_Folder(data, 0).fold()) if writes_disguised(data) else None


def writes_disguised(data: bytes) -> bool:
    """Whether ``data`` writes at least :data:`DISGUISED_LETTERS` Latin letters in disguise (what
    :func:`folded_view` folds)."""
    if data.isascii():
        return False
    found = 0
    for pattern in _DISGUISED:
        for _ in pattern.finditer(data):
            found += 1
            if found >= DISGUISED_LETTERS:
                return True
    return False


def clusters(at: npt.NDArray[np.integer], gap: int = 1) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.intp]]:
    """Indices of the first and last member of each cluster of the sorted positions ``at``.

    Consecutive positions at most ``gap`` apart belong to one cluster (``gap=1``: runs).
    """
    breaks = np.flatnonzero(np.diff(at) > gap)
    return np.concatenate(([0], breaks + 1)), np.concatenate((breaks, [len(at) - 1]))


def near_rtl(data: bytes, start: int, end: int, reach: int = 48) -> bool:
    """Whether right-to-left letters (Hebrew, Arabic...) lie within ``reach`` bytes of ``data[start:end]``:
    bidi characters there are ordinary typography, not a trick."""
    return _RTL.search(data[max(0, start - reach) : end + reach].decode("utf-8", "ignore")) is not None


def byte_mask(members: bytes) -> bytes:
    """A ``bytes.translate`` table mapping ``members`` to 1 and every other byte to 0.

    ``np.frombuffer(data.translate(table), dtype=bool)`` is a membership mask,
    about three times faster than indexing a numpy lookup table.
    """
    return bytes(1 if b in members else 0 for b in range(256))


_BLANK_OR_BREAK = bytes.maketrans(b"\t\r\x0b\x0c", b" \n  ")  # runs' first bytes: ' ' or '\n'
_ODD_SPACE = (b"\t", b"\r", b"\x0b", b"\x0c")


def collapse_whitespace(data: bytes) -> tuple[bytes, npt.NDArray[np.bool_] | None]:
    """Each whitespace run -> one newline (if it held a line break) or one space.

    Returns the collapsed bytes and the mask of original bytes kept, or
    ``None`` when ``data`` is already collapsed.
    """
    collapsed, dropped = _collapse(data)
    if dropped is None:
        return collapsed, None
    keep = np.ones(len(data), dtype=bool)
    keep[dropped] = False
    return collapsed, keep


def _collapse(data: bytes) -> tuple[bytes, Ints | None]:
    """:func:`collapse_whitespace`, returning the sorted positions of the dropped bytes instead.

    A few vectorized passes over the bytes (no ``translate`` unless tabs, CRs
    or form feeds occur): every whitespace byte that follows another is
    dropped; a run's first byte becomes ``\n`` if the run held a line break.
    """
    arr = np.frombuffer(data, dtype=np.uint8)
    odd = any(char in data for char in _ODD_SPACE)
    space = (arr - np.uint8(9) < 5) | (arr == 32)  # \t \n \v \f \r and ' ' (uint8 wraps below 9)
    dropped = np.flatnonzero(space[1:] & space[:-1]) + 1  # all but the first byte of each run
    if not len(dropped) and not odd:
        return data, None
    out = np.frombuffer(bytearray(data.translate(_BLANK_OR_BREAK) if odd else data), dtype=np.uint8)
    if len(dropped):
        held = arr[dropped]
        is_break = (held == 10) | (held == 13)
        if is_break.any():  # runs that start blank but hold a break further on
            # where each run's dropped bytes begin (few int arrays: this was the pre-check's peak)
            blocks = np.flatnonzero(np.diff(dropped, prepend=-2) != 1)
            heads = blocks[np.searchsorted(blocks, np.flatnonzero(is_break), side="right") - 1]
            out[dropped[heads] - 1] = 10
        keep = np.ones(len(arr), dtype=bool)
        keep[dropped] = False
        out = out[keep]
    return out.tobytes(), dropped.astype(np.int64, copy=False)


@dataclass
class _Folder:
    """Folds the non-ASCII runs of ``data``; collects signals and hidden payloads."""

    data: bytes
    base: int
    signals: dict[str, tuple[int, int]] = field(default_factory=dict)
    hidden: list[Layer] = field(default_factory=list)

    def fold(self) -> tuple[bytes, Pieces]:
        high = np.flatnonzero(np.frombuffer(self.data, dtype=np.uint8) >= 0x80)
        firsts, lasts = clusters(high)
        starts, ends = high[firsts].astype(np.int64), (high[lasts] + 1).astype(np.int64)
        raws = [self.data[s:e] for s, e in zip(starts.tolist(), ends.tolist(), strict=True)]
        joined = b"\x00".join(raws).decode("utf-8", "surrogateescape")  # runs never hold a NUL byte
        outs = joined.translate(_FOLD).split("\x00")
        marks = [m.start() for m in _NEEDS_CONTEXT.finditer(joined)]
        if marks:  # map marks to runs via the NUL separators, then walk only the runs that need it
            texts = joined.split("\x00")
            separators = np.cumsum([len(t) + 1 for t in texts]) - 1
            candidates = sorted(set(np.searchsorted(separators, marks).tolist()))
            for index in self._needing_context(texts, candidates, starts, ends):
                outs[index] = self._fold_chars(int(starts[index]), int(ends[index]), texts[index])
        encoded = [out.encode("utf-8", "surrogateescape") for out in outs]
        gap_starts, gap_ends = np.concatenate(([0], ends)), np.concatenate((starts, [len(self.data)]))
        gaps = [self.data[a:b] for a, b in zip(gap_starts.tolist(), gap_ends.tolist(), strict=True)]
        folded = b"".join(chain.from_iterable(zip(gaps, encoded, strict=False))) + gaps[-1]
        lengths = np.empty(2 * len(raws) + 1, dtype=np.int64)
        lengths[0::2], lengths[1::2] = gap_ends - gap_starts, [len(e) for e in encoded]
        ostarts, oends = np.empty_like(lengths), np.empty_like(lengths)
        ostarts[0::2], ostarts[1::2], oends[0::2], oends[1::2] = gap_starts, starts, gap_ends, ends
        exact = np.ones(len(lengths), dtype=bool)
        exact[1::2] = [e == r for e, r in zip(encoded, raws, strict=True)]
        keep = lengths > 0
        lstarts = (np.cumsum(lengths) - lengths)[keep]
        return folded, Pieces(lstarts, ostarts[keep] + self.base, oends[keep] + self.base, exact[keep])

    def _needing_context(
        self, texts: list[str], candidates: list[int], starts: Ints, ends: Ints
    ) -> list[int]:
        """The candidate runs that must be folded character by character."""
        found = []
        for index in candidates:
            text = texts[index]
            kinds = {m.lastgroup for m in _NEEDS_CONTEXT.finditer(text)}
            if (
                None in kinds  # invisibles at a run edge or doubled, tag characters, selector runs
                or ("bidi" in kinds and not _RTL.search(text))  # marks outside right-to-left text
                or ("lookalike" in kinds and self._touches_latin(int(starts[index]), int(ends[index])))
            ):
                found.append(index)
        return found

    def _touches_latin(self, start: int, end: int) -> bool:
        return any(
            byte in _ASCII_LETTER for byte in self.data[max(0, start - 1) : start] + self.data[end : end + 1]
        )

    def _signal(self, name: str, start: int, end: int) -> None:
        self.signals.setdefault(name, (self.base + start, self.base + end))

    def _fold_chars(self, start: int, end: int, text: str) -> str:
        """Fold one run character by character: invisibles in context, lookalikes, hidden text."""
        before = self.data[start - 1] if start else 32
        after = self.data[end] if end < len(self.data) else 32
        mixed = self._touches_latin(start, end)  # a lookalike inside a Latin word
        out: list[str] = []
        pending: list[int] = []  # consecutive tag / variation-selector code points
        pos = pending_at = start
        for index, ch in enumerate(text):
            cp = ord(ch)
            size = 1 if cp < 0x80 or 0xDC80 <= cp <= 0xDCFF else 2 if cp < 0x800 else 3 if cp < 0x10000 else 4
            if cp in _TAGS or cp in _VARIATION:
                pending_at = pos if not pending else pending_at
                pending.append(cp)
            else:
                if pending:
                    self._hidden(
                        pending, text[index - len(pending) - 1 : index - len(pending)], pending_at, pos
                    )
                    pending = []
                if cp in _ZERO_WIDTH or cp in _BIDI:
                    name = self._invisible(cp, text, index, before, after, start, end)
                    if name:
                        self._signal(name, pos, pos + size)
                elif mixed and ch in _CONFUSABLES:
                    self._signal("homoglyphs", pos, pos + size)
                    out.append(_CONFUSABLES[ch])
                else:
                    out.append(_FOLD[cp])
            pos += size
        if pending:
            self._hidden(
                pending, text[len(text) - len(pending) - 1 : len(text) - len(pending)], pending_at, pos
            )
        return "".join(out)

    def _invisible(self, cp: int, text: str, index: int, before: int, after: int, s: int, e: int) -> str:
        """The signal an invisible character raises in its context, or ``""`` if it is legitimate."""
        if cp in _BIDI:
            return "" if near_rtl(self.data, s, e) else "bidi-control"  # marks inside RTL text are normal
        if cp == 0xFEFF and self.base + s == 0 and index == 0:
            return ""  # a byte-order mark at the very start
        around = (
            text[index - 1] if index else chr(before),
            text[index + 1] if index + 1 < len(text) else chr(after),
        )
        if any((c.isascii() and c.isalnum()) or ord(c) in _ZERO_WIDTH for c in around):
            return "zero-width-chars"  # hiding inside a word
        return ""  # joiners inside emoji sequences, Indic or Persian words

    def _hidden(self, pending: list[int], previous: str, start: int, end: int) -> None:
        """Tag characters (unless an emoji flag) and selector runs: signal, and decode as a layer."""
        tags = [cp for cp in pending if cp in _TAGS]
        selectors = [cp for cp in pending if cp in _VARIATION]
        if tags and not (previous == "\U0001f3f4" and tags[-1] == 0xE007F and len(tags) <= 8):
            self._signal("unicode-tags", start, end)
            payload = bytes(cp - 0xE0000 for cp in tags if 0xE0020 <= cp <= 0xE007E)
            self.hidden.append(Layer("tags", payload, Pieces.whole(self.base + start, self.base + end), 1))
        if len(selectors) >= 4:
            self._signal("variation-selectors", start, end)
            payload = bytes(cp - 0xFE00 if cp < 0xFE10 else cp - 0xE0100 + 16 for cp in selectors)
            self.hidden.append(
                Layer("variation-selectors", payload, Pieces.whole(self.base + start, self.base + end), 1)
            )
