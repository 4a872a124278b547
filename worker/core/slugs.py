"""Sentences written as slugs: words joined by ``-``, ``+``, ``_`` or ``%20`` instead of spaces.

An instruction hidden in a link reads ``...#OBJECTIVE:-You-MUST-COMPLETE-THIS-...-IGNORE-ALL-TEXT``
or ``?q=send+the+api+key+to+...``: an agent that follows or reads the link reads the sentence, and
a text model reads a run of joined words. :class:`Deslugged` gives a view's windows with every run
of at least ``MIN_WORDS`` such words written with spaces, in place (a joiner becomes as many
spaces as it has bytes), so a window keeps its offsets and its context: the model reads the words
where they stand. Shorter runs (dates, UUIDs, ``snake_case`` names, ``kebab-case`` options) are
left alone; so is anything with no joined words. At most ``MAX_RUNS`` runs of a view are kept (16
bytes each), so an artifact made of runs costs at most 1 MB; past them it is read as it is.
"""

from __future__ import annotations

import re
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Iterator
from itertools import islice
from typing import Protocol

MIN_WORDS = 6  # words in a run; five joiners or more
MAX_RUNS = 65536
# A word: letters, digits, an apostrophe, or bytes of a multi-byte UTF-8 character; at most 32 of
# them, so that a long base64 blob (it has ``+``) reads as a few runs at most.
_WORD = rb"[A-Za-z0-9'\x80-\xff]{1,32}"
_JOIN = rb"(?:[-+_]|%20)"
_RUN = re.compile(rb"(?<![A-Za-z0-9'\x80-\xff])(?:" + _WORD + _JOIN + rb"){%d,}" % (MIN_WORDS - 1) + _WORD)
_JOINER = re.compile(_JOIN)


class _Sliceable(Protocol):
    def __len__(self) -> int: ...
    def __getitem__(self, key: slice, /) -> bytes | bytearray: ...


def slug_runs(pieces: Iterable[bytes | bytearray | memoryview]) -> Iterator[tuple[int, int]]:
    """The ``[start, end)`` spans of the slug runs of ``pieces`` (a view's bytes, in order), as
    offsets into their joined bytes, one at a time. A run that crosses from one piece into the next
    is read as two (for a diff's added view, a run that a removed line cut in two)."""
    at = 0
    for piece in pieces:
        for match in _RUN.finditer(piece):
            yield at + match.start(), at + match.end()
        at += len(piece)


def deslug(run: bytes) -> bytes:
    """``run`` with a space for each byte of its joiners (its length kept)."""
    return _JOINER.sub(lambda match: b" " * len(match.group()), run)


class Deslugged:
    """A view held whole (``len`` and slices) read with its slug ``runs`` written with spaces."""

    __slots__ = ("_ends", "_starts", "_view")

    def __init__(self, view: _Sliceable, runs: Iterable[tuple[int, int]], limit: int = MAX_RUNS) -> None:
        self._view = view
        self._starts, self._ends = array("q"), array("q")
        for start, end in islice(runs, limit):
            self._starts.append(start)
            self._ends.append(end)

    def __bool__(self) -> bool:
        """Whether the view has a run to read as words."""
        return bool(self._starts)

    @property
    def view(self) -> _Sliceable:
        """The view read."""
        return self._view

    def __len__(self) -> int:
        return len(self._view)

    def __getitem__(self, key: slice) -> bytes:
        start, stop, step = key.indices(len(self))
        if step != 1:
            raise ValueError("a deslugged view is read in contiguous slices")
        text = self._view[start:stop]
        # the runs in the slice: from the first that ends after ``start`` to the last that starts before ``stop``
        first, last = bisect_right(self._ends, start), bisect_left(self._starts, stop)
        if first >= last:
            return bytes(text)
        out = bytearray(text)
        for index in range(first, last):
            lo, hi = max(self._starts[index], start), min(self._ends[index], stop)
            out[lo - start : hi - start] = deslug(bytes(self._view[lo:hi]))
        return bytes(out)
