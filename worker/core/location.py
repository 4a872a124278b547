"""Where a byte offset of an artifact is, as a person (or a code-scanning tool) names it: a line,
and for a unified diff the file the offset belongs to and its line in that file.

Evidence carries byte spans into the artifact's original bytes (:class:`worker.core.models.Span`);
``canary scan --format sarif`` turns them into file and line with :class:`Locator`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from worker.core.diff import Diff, parse_diff

__all__ = ["Location", "Locator"]

_HUNK = re.compile(rb"@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@")  # matched at a position: no "^"


@dataclass(frozen=True)
class Location:
    """``path``: the file inside a diff ("" when the artifact is not a diff); ``line``: 1-based, in
    the new file for diffs (the old one for a deleted file), in the artifact itself otherwise."""

    path: str
    line: int


class Locator:
    """Offsets of one artifact to locations; the diff is parsed once, each lookup is a few scans."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.diff: Diff | None = parse_diff(data)

    def at(self, offset: int) -> Location:
        data = self.data
        offset = max(0, min(offset, len(data)))
        line_start = data.rfind(b"\n", 0, offset) + 1
        found = self.diff.file_at(offset) if self.diff is not None else None
        if found is None:
            return Location("", data.count(b"\n", 0, line_start) + 1)
        return Location(found.path, self._diff_line(found.start, line_start, old_side=found.is_deleted))

    def _diff_line(self, file_start: int, line_start: int, old_side: bool) -> int:
        """The line, in the file's new (or old) version, of the diff line starting at ``line_start``:
        the hunk header's start plus the lines of that side before it; 1 for a file header line."""
        data = self.data
        if data.startswith(b"@@ ", line_start):
            hunk = line_start
        else:
            before = data.rfind(b"\n@@ ", file_start, line_start)
            if before < 0:
                return 1  # on the file's header lines (``diff --git``, ``---``/``+++``)
            hunk = before + 1
        header = _HUNK.match(data, hunk)
        if header is None:
            return 1
        first = int(header.group(1 if old_side else 2))
        body_start = data.find(b"\n", hunk, line_start)
        if body_start < 0:  # the offset is on the hunk header itself
            return max(1, first)
        body = data[body_start:line_start]  # "\n" + each whole line before the offset's
        other = b"\n+" if old_side else b"\n-"
        lines = body.count(b"\n") - 1  # the last "\n" ends the line before the offset's
        skipped = body.count(other) + body.count(b"\n\\")  # the other side's lines, "\ No newline"
        return max(1, first + lines - skipped)
