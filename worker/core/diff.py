"""Unified-diff parsing for package releases, with byte offsets into the original diff.

A release under the ``malicious-package`` policy arrives as one unified diff
(``git diff`` style with ``diff --git`` headers, or plain ``diff -u``), possibly
covering many files, new ones (``--- /dev/null``) and binaries (``Binary files
... differ``). The parser classifies lines with numpy so a many-megabyte diff
costs a few passes over its bytes, not a Python loop per line: only header
lines (a handful per file) are looked at one by one.

Added and removed lines are kept as *runs* of consecutive lines, each a byte
span ``[start, end)`` of the original diff including the leading ``+``/``-``.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property
from itertools import chain
from typing import Any

import numpy as np
import numpy.typing as npt

from worker.core.paths import is_manifest, is_package_metadata, path_matches

Spans = npt.NDArray[np.int64]

__all__ = ["Diff", "DiffFile", "parse_diff"]

# First four bytes of the header lines the parser reads (``@@`` lines by their first two).
_HEADER_HEADS = np.array([int.from_bytes(h, "big") for h in (b"diff", b"new ", b"dele", b"Bina", b"GIT ")])
_HEADER_FIRST = np.isin(np.arange(256), np.frombuffer(b"dnBG@", dtype=np.uint8))  # their first bytes
_PATH = re.compile(rb"^(?:---|\+\+\+) (?:\"?[ab]/)?(.*?)\"?(?:\t.*)?$")
_GIT_HEADER = re.compile(rb"^diff --git \"?a/(.*?)\"? \"?b/(.*?)\"?$")
_BINARY = re.compile(rb"^Binary files (?:\"?a/)?(.*?)\"? and (?:\"?b/)?(.*?)\"? differ$")


@dataclass(frozen=True, slots=True)  # a big release has thousands: no per-instance dict
class DiffFile:
    """One file of a diff: its path, kind, and how many lines it adds and removes."""

    path: str
    old_path: str | None
    start: int
    is_new: bool = False
    is_deleted: bool = False
    is_binary: bool = False
    added_lines: int = 0
    removed_lines: int = 0

    @property
    def manifest(self) -> bool:
        return is_manifest(self.path)


@dataclass(frozen=True, eq=False)
class Diff:
    """A parsed diff: its files and the byte spans of its added and removed line runs."""

    files: tuple[DiffFile, ...]
    added: Spans = field(repr=False)  # shape (n, 2): [start, end) of runs of added lines
    removed: Spans = field(repr=False)
    _globbed: dict[tuple[str, ...], bool] = field(default_factory=dict, init=False, repr=False)

    @cached_property
    def _file_starts(self) -> Spans:
        return np.array([f.start for f in self.files], dtype=np.int64)

    def has_file(self, globs: tuple[str, ...]) -> bool:
        """Whether any file of the diff matches one of ``globs`` (see :func:`path_matches`)."""
        found = self._globbed.get(globs)
        if found is None:
            found = self._globbed[globs] = any(path_matches(f.path, globs) for f in self.files)
        return found

    def file_at(self, offset: int) -> DiffFile | None:
        """The file whose section of the diff contains byte ``offset``."""
        index = int(np.searchsorted(self._file_starts, offset, side="right")) - 1
        return self.files[index] if index >= 0 else None

    def file_indices(self, offsets: list[int]) -> list[int]:
        """For each of ``offsets``, the index in ``files`` of the file whose section holds
        it (-1 before the first): :meth:`file_at` of many offsets in one search."""
        return (np.searchsorted(self._file_starts, offsets, side="right") - 1).tolist()  # type: ignore[no-any-return]

    @cached_property
    def _added_starts(self) -> Spans:  # contiguous: searchsorted would copy a strided column per call
        return np.ascontiguousarray(self.added[:, 0])

    @cached_property
    def _added_ends(self) -> Spans:
        return np.ascontiguousarray(self.added[:, 1])

    def in_added(self, offset: int) -> bool:
        """Whether byte ``offset`` lies on an added line."""
        index = int(np.searchsorted(self._added_starts, offset, side="right")) - 1
        return index >= 0 and offset < int(self._added_ends[index])

    def added_runs(self, start: int = 0, end: int | None = None) -> list[tuple[int, int]]:
        """Added-line runs clipped to ``[start, end)``."""
        end = sys.maxsize if end is None else end
        lo = int(np.searchsorted(self._added_ends, start, side="right"))
        hi = int(np.searchsorted(self._added_starts, end, side="left"))
        return [(max(start, s), min(end, e)) for s, e in self.added[lo:hi].tolist()]

    @cached_property
    def manifest_only(self) -> bool:
        """An update whose only changes are to install manifests (and lockfiles/metadata).

        The Clinejection shape: code byte-identical, one manifest edited. A new
        package (every file created) is not "manifest only" however small.
        """
        changed = [f for f in self.files if f.added_lines or f.removed_lines or f.is_binary]
        edited_manifest = any(f.manifest and not f.is_new for f in changed)
        return edited_manifest and all(f.manifest or is_package_metadata(f.path) for f in changed)

    @cached_property
    def new_binaries(self) -> tuple[DiffFile, ...]:
        """Binary files that appear in this release."""
        return tuple(f for f in self.files if f.is_binary and f.is_new)


def looks_like_diff(data: bytes) -> bool:
    """Cheap test: a ``diff --git`` header or a ``---``/``+++`` pair near a hunk."""
    head = data[:1]
    if data.startswith(b"diff --git ") or b"\ndiff --git " in data:
        return True
    return (head == b"-" or b"\n--- " in data) and b"\n+++ " in data and b"\n@@ " in data


# The last diff parsed, with the bytes object it was parsed from: a vote reads one window as
# added views, as prose and for evidence locations, and each would parse it again (an eighth of
# the pre-check and votes' CPU on a 24 KB diff). Matched by identity, never by value; only up to a
# window's size, so an idle worker keeps no large artifact alive. A tuple, replaced whole, so a
# thread never reads one call's bytes with another's diff.
_LAST_MAX = 1 << 20
_last: tuple[bytes, int, Diff | None] | None = None


def parse_diff(data: bytes, block: int = 1 << 20) -> Diff | None:
    """Parse a unified diff; ``None`` when ``data`` is not one.

    Lines are classified ``block`` bytes at a time, so temporary arrays stay
    bounded however large the diff is. The same bytes object parsed again (up to 1 MB) gives
    the same :class:`Diff`, which is read-only apart from its caches.
    """
    global _last
    last = _last
    if last is not None and last[0] is data and last[1] == block:
        return last[2]
    diff = _parse_diff(data, block)
    _last = (data, block, diff) if len(data) <= _LAST_MAX else None
    return diff


def _parse_diff(data: bytes, block: int) -> Diff | None:
    if not looks_like_diff(data):
        return None
    headers: list[Spans] = []
    added: list[Spans] = []
    removed: list[Spans] = []
    lo = 0
    if len(data) <= min(block, SMALL_DIFF):
        found = _scan_small(data)
        headers, added, removed, lo = [found[0]], [found[1]], [found[2]], len(data)
    while lo < len(data):
        cut = data.find(b"\n", lo + block) + 1 if lo + block < len(data) else 0
        if cut and data.startswith(b"--- ", max(lo, data.rfind(b"\n", lo, cut - 1) + 1)):
            cut = data.find(b"\n", cut) + 1  # keep a ---/+++ header pair in one block
        hi = cut or len(data)
        found = _scan_block(data, lo, hi)
        headers.append(found[0])
        added.append(found[1])
        removed.append(found[2])
        lo = hi
    fields = _read_headers(data, chain.from_iterable(block.tolist() for block in headers))
    if not fields:
        return None
    added_runs, removed_runs = _merge(np.concatenate(added)), _merge(np.concatenate(removed))
    added.clear()  # the blocks' runs, merged: not held through the files' build
    removed.clear()
    starts = [f[2] for f in fields]
    counts_added = _count_lines(added_runs, starts)
    counts_removed = _count_lines(removed_runs, starts)
    files = tuple(
        DiffFile(*f, added_lines=a, removed_lines=r)
        for f, a, r in zip(fields, counts_added, counts_removed, strict=True)
    )
    return Diff(files, added_runs[:, :2].copy(), removed_runs[:, :2].copy())


def _scan_block(data: bytes, lo: int, hi: int) -> tuple[Spans, Spans, Spans]:
    """Header line starts, and added/removed runs ``(start, end, lines)``, of ``data[lo:hi]``."""
    arr = np.frombuffer(data, dtype=np.uint8, count=hi - lo, offset=lo)
    newlines = np.flatnonzero(arr == 10)
    starts = np.concatenate(([0], newlines + 1))
    ends = np.concatenate((newlines, [len(arr)]))
    if starts[-1] >= len(arr):
        starts, ends = starts[:-1], ends[:-1]
    first = np.where(ends > starts, arr[np.minimum(starts, len(arr) - 1)], 32)
    pairs = _header_pairs(data, lo + starts, first)
    maybe = np.flatnonzero(_HEADER_FIRST[first])  # the few lines a header's first byte starts
    head = first[maybe].astype(np.uint32) << 24
    line_starts, line_ends = starts[maybe], ends[maybe]
    for k in (1, 2, 3):  # bytes past a line's end read as spaces
        head |= np.where(
            line_ends - line_starts > k, arr[np.minimum(line_starts + k, len(arr) - 1)], 32
        ).astype(np.uint32) << (24 - 8 * k)
    structural = maybe[np.isin(head, _HEADER_HEADS) | (head >> 16 == 0x4040)]  # or "@@"
    kind = first.copy()
    kind[pairs] = 0
    headers = lo + starts[np.union1d(structural, pairs[first[pairs] == 45])]
    return (
        headers.astype(np.int64),
        _runs(kind == 43, lo + starts, lo + ends, len(data)),
        _runs(kind == 45, lo + starts, lo + ends, len(data)),
    )


SMALL_DIFF = 1 << 14  # bytes: up to this size, regexes classify the lines (numpy's fixed cost is more)
_PAIR = re.compile(rb"\n--- [^\n]*\n(?=\+\+\+ )")  # a ---/+++ header pair: the --- line
_HEADER = re.compile(rb"\n(?:diff|dele|Bina|@@|(?:new|GIT)(?=[ \n]|\Z))")  # a header's first 4 bytes
_ADDED = re.compile(rb"\n\+[^\n]*(?:\n\+[^\n]*)*")  # a run of lines that start with "+"
_REMOVED = re.compile(rb"\n-[^\n]*(?:\n-[^\n]*)*")


def _scan_small(data: bytes) -> tuple[Spans, Spans, Spans]:
    """:func:`_scan_block` of all of a small ``data``, by regexes over ``"\n" + data``: there a
    line's start in ``data`` is the offset of the newline before it.

    numpy's fixed cost, about 300 us a call whatever the size, was a third of the pre-check's
    time on a diff of a few KB; these regexes take 30 us for 2 KB and grow with the size.
    """
    text = b"\n" + data
    pairs = [(m.start(), m.end() - 1) for m in _PAIR.finditer(text)]  # the --- and +++ lines' starts
    heads = {m.start() for m in _HEADER.finditer(text)}.union(minus for minus, _ in pairs)
    return (
        np.array(sorted(heads), dtype=np.int64),
        _line_runs(text, _ADDED, [plus for _, plus in pairs], len(data)),
        _line_runs(text, _REMOVED, [minus for minus, _ in pairs], len(data)),
    )


def _line_runs(text: bytes, runs: re.Pattern[bytes], cut: list[int], size: int) -> Spans:
    """``(start, end, lines)`` of each run that ``runs`` finds in ``text``, less the lines at ``cut``
    (header pairs: they are no added or removed lines and split a run)."""
    found: list[tuple[int, int, int]] = []
    for match in runs.finditer(text):
        lo, end = match.span()
        for line in (c for c in cut if lo <= c < end):  # rare: a header line inside a run
            if line > lo:
                found.append((lo, line, text.count(b"\n", lo, line)))
            after = text.find(b"\n", line + 1, end)
            lo = end if after < 0 else after
        if lo < end:
            found.append((lo, min(end, size), text.count(b"\n", lo, end)))
    return np.array(found, dtype=np.int64).reshape(-1, 3)


def _header_pairs(data: bytes, starts: Spans, first: npt.NDArray[np.uint8]) -> Spans:
    """Line indices of ``--- a`` / ``+++ b`` header pairs (both lines of each pair)."""
    arr = np.frombuffer(data, dtype=np.uint8)
    candidates = np.flatnonzero((first == 45) | (first == 43))
    # "--- " or "+++ ", one byte at a time over the lines still in the running: most added and
    # removed lines are out after their second byte (a 4-byte gather of each was 5 % of real diffs)
    for k in (1, 2, 3):
        at = arr[np.minimum(starts[candidates] + k, len(arr) - 1)]
        candidates = candidates[at == (first[candidates] if k < 3 else 32)]
    minus = candidates[first[candidates] == 45]
    plus = candidates[first[candidates] == 43]
    pairs = np.intersect1d(minus + 1, plus)  # a +++ line right after a --- line
    return np.union1d(pairs - 1, pairs).astype(np.int64)


FileFields = tuple[str, str | None, int, bool, bool, bool]  # DiffFile's fields but its line counts


def _read_headers(data: bytes, offsets: Iterable[int]) -> list[FileFields]:
    """Walk header lines only (a handful per file): each file's fields but its line counts, as a
    tuple once its headers are read (a dict per file was 10 MB of a 100 MB release's parse)."""
    files: list[FileFields] = []
    current: dict[str, Any] | None = None
    hunks_seen = True
    for offset in offsets:
        line = _line_at(data, offset)
        if line.startswith(b"@@"):
            hunks_seen = True
            continue
        git = _GIT_HEADER.match(line)
        if git or (line.startswith(b"--- ") and hunks_seen):
            old, new = (git.group(1), git.group(2)) if git else (b"", b"")
            path, old_path = new.decode("utf-8", "replace"), old.decode("utf-8", "replace") or None
            if current is not None:
                files.append(_fields(current))
            current = {
                "path": path,
                "old_path": old_path,
                "start": offset,
                "is_new": False,
                "is_deleted": False,
            }
            hunks_seen = not git  # a git header is followed by its own ---/+++ pair
        if current is not None and not git:
            _apply_header(current, line, data, offset)
        if line.startswith(b"--- "):
            hunks_seen = False
    if current is not None:
        files.append(_fields(current))
    return files


def _fields(current: dict[str, Any]) -> FileFields:
    """A file's header fields in :class:`DiffFile`'s order, one path string where both are equal."""
    path, old_path = current["path"], current["old_path"]
    return (
        path,
        path if old_path == path else old_path,
        current["start"],
        current["is_new"],
        current["is_deleted"],
        current.get("is_binary", False),
    )


def _apply_header(current: dict[str, Any], line: bytes, data: bytes, offset: int) -> None:
    """Fold one header line (mode, binary marker, ``---``/``+++`` paths) into ``current``."""
    if line.startswith(b"new file mode"):
        current["is_new"] = True
    elif line.startswith(b"deleted file mode"):
        current["is_deleted"] = True
    elif line.startswith((b"GIT binary patch", b"Binary files")):
        current["is_binary"] = True
        binary = _BINARY.match(line)
        if binary:
            old, new = binary.group(1), binary.group(2)
            current["is_new"] = current["is_new"] or old == b"/dev/null"
            current["path"] = (old if new == b"/dev/null" else new).decode("utf-8", "replace")
            current["old_path"] = None if current["is_new"] else current["old_path"]
    elif line.startswith(b"--- "):
        old_match = _PATH.match(line)
        new_match = _PATH.match(_line_at(data, data.find(b"\n", offset) + 1))
        old_path = old_match.group(1).decode("utf-8", "replace") if old_match else ""
        new_path = new_match.group(1).decode("utf-8", "replace") if new_match else ""
        current["is_new"] = current["is_new"] or old_path == "/dev/null"
        current["is_deleted"] = current["is_deleted"] or new_path == "/dev/null"
        current["old_path"] = None if current["is_new"] else old_path
        current["path"] = old_path if current["is_deleted"] else new_path


def _line_at(data: bytes, offset: int) -> bytes:
    end = data.find(b"\n", offset)
    return data[offset : end if end >= 0 else len(data)].rstrip(b"\r")


def _runs(mask: npt.NDArray[np.bool_], starts: Spans, ends: Spans, size: int) -> Spans:
    """``(start, end, lines)`` of each run of consecutive ``mask`` lines; ``end`` includes the newline."""
    lines = np.flatnonzero(mask)
    if not len(lines):
        return np.zeros((0, 3), dtype=np.int64)
    breaks = np.flatnonzero(np.diff(lines) > 1)
    first = np.concatenate(([lines[0]], lines[breaks + 1]))
    last = np.concatenate((lines[breaks], [lines[-1]]))
    return np.stack((starts[first], np.minimum(ends[last] + 1, size), last - first + 1), axis=1).astype(
        np.int64
    )


def _merge(runs: Spans) -> Spans:
    """Join runs that touch (a run split by a block boundary becomes one again)."""
    if len(runs) < 2:
        return runs
    touching = runs[1:, 0] == runs[:-1, 1]
    if not touching.any():
        return runs
    group = np.concatenate(([0], np.cumsum(~touching)))
    heads = np.flatnonzero(np.concatenate(([True], ~touching)))
    tails = np.concatenate((heads[1:] - 1, [len(runs) - 1]))
    lines = np.bincount(group, weights=runs[:, 2]).astype(np.int64)
    return np.stack((runs[heads, 0], runs[tails, 1], lines), axis=1)


def _count_lines(runs: Spans, file_starts: list[int]) -> list[int]:
    """Lines per file, given runs ``(start, end, lines)`` and each file's first byte."""
    owner = np.searchsorted(file_starts, runs[:, 0], side="right") - 1
    keep = owner >= 0
    counts = np.bincount(owner[keep], weights=runs[keep, 2], minlength=len(file_starts))
    return [int(c) for c in counts[: len(file_starts)]]
