"""An artifact as lines of safe text for the item page: evidence highlighted, hidden characters
marked, diff lines classed.

Everything here is plain data (strings and flags); the template escapes every string, so the
artifact is shown as text and never interpreted as HTML. Offsets are bytes into the artifact as
stored (the report's evidence spans are byte spans).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from worker.pipeline.review import HIDDEN_CODEPOINTS
from worker.pipeline.review_windows import model_windows as windows_to_show

MAX_LINES = 3000  # longer artifacts: the first lines and the lines around each piece of evidence
HEAD_LINES = 80
CONTEXT_LINES = 12
MAX_LINE_BYTES = 2000  # longer lines: the start and the bytes around each piece of evidence
LINE_CONTEXT_BYTES = 400
_HIDDEN = re.compile("[" + "".join(re.escape(chr(cp)) for cp in sorted(HIDDEN_CODEPOINTS)) + "]")


@dataclass
class Piece:
    """A run of text: ``kind`` is ``text``, ``hit`` (evidence), ``hidden`` (a written-out
    invisible or control character) or ``gap`` (bytes left out)."""

    text: str
    kind: str = "text"


@dataclass
class Line:
    number: int
    kind: str  # "", or for diffs: add, del, hunk, meta
    pieces: list[Piece] = field(default_factory=list)


@dataclass
class Shown:
    """The artifact as shown: lines (``None`` marks lines left out) and whether it is a diff."""

    lines: list[Line | None]
    diff: bool
    total_lines: int


def looks_like_diff(data: bytes) -> bool:
    """A unified diff: a ``+++`` file header and a ``@@`` hunk header at line starts."""
    return re.search(rb"(?m)^\+\+\+ ", data) is not None and re.search(rb"(?m)^@@ ", data) is not None


def _line_kind(line: bytes, diff: bool) -> str:
    if not diff:
        return ""
    if line.startswith((b"+++", b"---", b"diff ", b"index ")):
        return "meta"
    if line.startswith(b"@@"):
        return "hunk"
    return {b"+": "add", b"-": "del"}.get(line[:1], "")


def text_pieces(data: bytes, kind: str = "text") -> list[Piece]:
    """``data`` decoded (invalid bytes as U+FFFD), every hidden character its own ``\\uXXXX`` piece."""
    text = data.decode("utf-8", errors="replace")
    out: list[Piece] = []
    position = 0
    for match in _HIDDEN.finditer(text):
        if match.start() > position:
            out.append(Piece(text[position : match.start()], kind))
        out.append(Piece(f"\\u{ord(match.group()):04x}", "hidden"))
        position = match.end()
    if position < len(text):
        out.append(Piece(text[position:], kind))
    return out


def _ranges_in_line(start: int, end: int, spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The byte ranges of line ``[start, end)`` to show: all of it, or for a long line its start
    and the bytes around each span that touches it."""
    if end - start <= MAX_LINE_BYTES:
        return [(start, end)]
    wanted = [(start, start + MAX_LINE_BYTES // 2)]
    for a, b in spans:
        if b > start and a < end:
            wanted.append((max(start, a - LINE_CONTEXT_BYTES), min(end, b + LINE_CONTEXT_BYTES)))
    merged: list[tuple[int, int]] = []
    for a, b in sorted(wanted):
        if merged and a <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], b))
        else:
            merged.append((a, b))
    return merged


def _line(
    data: bytes,
    number: int,
    start: int,
    end: int,
    spans: list[tuple[int, int]],
    diff: bool,
    read: Callable[[bytes], bytes] | None,
) -> Line:
    line = Line(number, _line_kind(data[start:end], diff))
    position = start
    for lo, hi in _ranges_in_line(start, end, spans):
        if lo > position:
            line.pieces.append(Piece(f"[… {lo - position} bytes …]", "gap"))
        cuts = sorted({lo, hi, *(x for a, b in spans for x in (a, b) if lo < x < hi)})
        for a, b in zip(cuts, cuts[1:], strict=False):
            hit = any(s < b and e > a for s, e in spans)
            text = data[a:b] if read is None else read(data[a:b])
            for piece in text_pieces(text, "hit" if hit else "text"):
                last = line.pieces[-1] if line.pieces else None
                if last is not None and last.kind == piece.kind != "hidden":
                    last.text += piece.text  # overlapping evidence: one highlight
                else:
                    line.pieces.append(piece)
        position = hi
    if end > position:
        line.pieces.append(Piece(f"[… {end - position} bytes …]", "gap"))
    return line


def show(data: bytes, spans: list[tuple[int, int]], read: Callable[[bytes], bytes] | None = None) -> Shown:
    """``data`` split into lines, each with its evidence highlighted, each piece shown through
    ``read`` when given (a JSON document read as its fields, with its escapes undone, as the
    models read it: :func:`worker.core.fields.reader_view`)."""
    spans = sorted((max(0, a), min(len(data), b)) for a, b in spans if b > a)
    diff = looks_like_diff(data)
    bounds: list[tuple[int, int]] = []
    start = 0
    for match in re.finditer(rb"\n", data):
        bounds.append((start, match.start()))
        start = match.end()
    if start < len(data) or not bounds:
        bounds.append((start, len(data)))
    keep = set(range(len(bounds)))
    if len(bounds) > MAX_LINES:
        keep = set(range(HEAD_LINES))
        for i, (a, b) in enumerate(bounds):
            if any(s < max(b, a + 1) and e > a for s, e in spans):
                keep.update(range(max(0, i - CONTEXT_LINES), min(len(bounds), i + CONTEXT_LINES + 1)))
    lines: list[Line | None] = []
    for i, (a, b) in enumerate(bounds):
        if i in keep:
            lines.append(_line(data, i + 1, a, b, spans, diff, read))
        elif lines and lines[-1] is not None or not lines:
            lines.append(None)
    return Shown(lines, diff, len(bounds))


def evidence_spans(report: dict[str, Any]) -> list[tuple[int, int]]:
    """The byte spans of the pre-check's evidence in a report."""
    out = []
    for item in report.get("precheck", {}).get("evidence", []):
        span = item.get("span") or {}
        if isinstance(span.get("start"), int) and isinstance(span.get("end"), int):
            out.append((span["start"], span["end"]))
    return out


def model_windows(
    report: dict[str, Any], data: bytes, top: int = 3, read: Callable[[bytes], bytes] | None = None
) -> list[dict[str, Any]]:
    """The highest-scoring model windows when the models, not the pre-check, decided
    (:func:`worker.pipeline.review_windows.model_windows`), each window's text as pieces."""
    return [
        {
            "detector": w.label,
            "score": w.score,
            "view": w.view,
            "start": w.start,
            "end": w.end,
            "pieces": text_pieces(w.text) if w.text is not None else None,
        }
        for w in windows_to_show(report, data, top, read)
    ]
