"""Offset maps: how a position in a derived layer maps back to a span of the original bytes.

A layer (:class:`Layer`) is bytes plus an :class:`OffsetMap` to half-open byte spans of the
ORIGINAL artifact, so evidence found in normalized or decoded text points at bytes an analyst
can open. Maps compose (:class:`Compose`), shift, reverse, and gather pieces built by
:class:`PieceBuilder`.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Protocol

import numpy as np
import numpy.typing as npt

__all__ = [
    "Compose",
    "Gather",
    "Ints",
    "Layer",
    "Mapped",
    "OffsetMap",
    "PieceBuilder",
    "Pieces",
    "Reverse",
    "Shift",
]

Ints = npt.NDArray[np.int64]


class OffsetMap(Protocol):
    """Maps a ``[start, end)`` range of a layer to a byte range of the original artifact."""

    def span(self, start: int, end: int) -> tuple[int, int]: ...


@dataclass(frozen=True)
class Shift:
    """The layer is a verbatim slice of the original starting at ``base``."""

    base: int = 0

    def span(self, start: int, end: int) -> tuple[int, int]:
        return self.base + start, self.base + end


@dataclass(frozen=True, eq=False)
class Pieces:
    """Piece ``i`` covers layer ``[lstarts[i], lstarts[i+1])`` and original ``[ostarts[i], oends[i])``;
    exact pieces map byte for byte, inexact ones (folded or decoded) as a whole."""

    lstarts: Ints
    ostarts: Ints
    oends: Ints
    exact: npt.NDArray[np.bool_]

    @classmethod
    def whole(cls, start: int, end: int) -> Pieces:
        """Every offset of the layer maps to the one original span ``[start, end)``."""
        return cls(
            np.zeros(1, np.int64), np.full(1, start, np.int64), np.full(1, end, np.int64), np.zeros(1, bool)
        )

    def span(self, start: int, end: int) -> tuple[int, int]:
        if not len(self.lstarts):
            return 0, 0
        i = max(0, int(np.searchsorted(self.lstarts, start, side="right")) - 1)
        j = max(0, int(np.searchsorted(self.lstarts, max(start, end - 1), side="right")) - 1)
        first = (
            int(self.ostarts[i]) + (start - int(self.lstarts[i])) if self.exact[i] else int(self.ostarts[i])
        )
        last = int(self.ostarts[j]) + (end - int(self.lstarts[j])) if self.exact[j] else int(self.oends[j])
        first = min(first, int(self.oends[i]))
        return first, max(first, min(last, int(self.oends[j])))


@dataclass(frozen=True)
class Compose:
    """``outer`` after ``inner``: layer -> intermediate layer -> original."""

    inner: OffsetMap
    outer: OffsetMap

    def span(self, start: int, end: int) -> tuple[int, int]:
        return self.outer.span(*self.inner.span(start, end))


@dataclass(frozen=True)
class Reverse:
    """The layer is ``parent[::-1]`` (``length`` bytes); map through the reversal."""

    inner: OffsetMap
    length: int

    def span(self, start: int, end: int) -> tuple[int, int]:
        return self.inner.span(self.length - end, self.length - start)


class Gather:
    """Layer byte ``i`` is the ``i``-th byte at ``base`` that whitespace collapsing kept.

    Stored as the (sorted) positions of the DROPPED bytes, usually a small
    fraction of the layer; a span is two binary searches, no per-byte index.
    """

    def __init__(self, dropped: Ints, size: int, base: int = 0) -> None:
        self.kept = size - len(dropped)
        self.base = base
        self._dropped: Ints | None = dropped
        self._rank: Ints | None = None

    def _position(self, index: int) -> int:
        """Original position of the ``index``-th kept byte."""
        if self._rank is None:  # kept bytes before each dropped one (non-decreasing), in place of
            assert self._dropped is not None  # ``dropped``: one array a layer, not two
            self._rank, self._dropped = self._dropped - np.arange(len(self._dropped), dtype=np.int64), None
        return index + int(np.searchsorted(self._rank, index, side="right"))

    def span(self, start: int, end: int) -> tuple[int, int]:
        if not self.kept:
            return self.base, self.base
        first = self._position(min(start, self.kept - 1))
        last = self._position(min(max(end, start + 1), self.kept) - 1) + 1
        return self.base + first, self.base + max(first, last)


class Mapped(bytes):
    """A text derived from an artifact (its references or look-alike letters read) that knows where
    each of its bytes is written in it: a view a windowed model reads in place of the raw bytes."""

    pieces: Pieces
    # Where the text the view was derived from lies in the artifact, when it is not the artifact
    # itself (a diff's added lines, a JSON document's fields): the pieces' offsets are that text's.
    through: OffsetMap | None = None

    @classmethod
    def of(cls, text: bytes, pieces: Pieces) -> Mapped:
        view = cls(text)
        view.pieces = pieces
        return view

    def raw_span(self, start: int, end: int) -> tuple[int, int] | None:
        """Where the bytes ``[start, end)`` of the view are written in the artifact, first to last
        (a piece read as a whole: all of it); None for an empty or outside span."""
        if not 0 <= start < end <= len(self):
            return None
        span = self.pieces.span(start, end)
        return span if self.through is None else self.through.span(*span)


class PieceBuilder:
    """Accumulates output bytes and the :class:`Pieces` map that explains them."""

    def __init__(self) -> None:
        self.parts: list[bytes] = []
        self.size = 0
        self._rows: list[tuple[int, int, int, bool]] = []

    def add(self, out: bytes, ostart: int, oend: int, exact: bool) -> None:
        if out:
            self._rows.append((self.size, ostart, oend, exact))
            self.parts.append(out)
            self.size += len(out)

    def build(self) -> tuple[bytes, Pieces]:
        rows = np.array(self._rows, dtype=np.int64).reshape(-1, 4)
        pieces = Pieces(rows[:, 0].copy(), rows[:, 1].copy(), rows[:, 2].copy(), rows[:, 3].astype(bool))
        joined, self.parts = b"".join(self.parts), []  # the parts are not held beside their join
        return joined, pieces


@dataclass(frozen=True)
class Layer:
    """One byte string the rules scan, and where its bytes came from in the original."""

    name: str
    data: bytes
    offsets: OffsetMap
    depth: int = 0

    @cached_property
    def flat(self) -> bytes:
        """The same bytes with newlines read as spaces (same length, same map)."""
        return self.data.replace(b"\n", b" ")

    @cached_property
    def starts(self) -> bytes:
        """:attr:`flat`, but a newline before a capital letter (A-Z) stays: a line that starts
        with one begins a sentence of its own after a heading, a table row or a line without a
        full stop, where a rule's ``^`` (a sentence's start) reads it as at the start of the text.
        Only rules with a ``^`` read it (:attr:`worker.core.rule.Rule.starts_line`), as well as the
        flat text: a sentence wrapped before a name still reads as one."""
        if b"\n" not in self.data:
            return self.data
        arr = np.frombuffer(self.data, dtype=np.uint8)
        out = arr.copy()
        breaks = np.flatnonzero(arr == 10)
        following = np.append(arr, np.uint8(0))[breaks + 1]
        out[breaks[(following < 65) | (following > 90)]] = 32
        return out.tobytes()
