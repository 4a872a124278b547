"""Ticket and chat exports as one artifact per row: ``jsonl:PATH`` and ``csv:PATH``.

A field mapping says what a row's artifact is (``--field content=body --field source=id``, or
``CANARY_TABLE_FIELDS=content=body,source=id``):

- ``content=FIELD`` (repeatable; several are joined by a blank line): the text gated. Without
  one, the whole row is gated (a JSON line as it stands, a CSV row as a JSON object of its
  columns). Dotted names reach into JSON objects (``content=ticket.body``).
- ``source=FIELD``: the row's source name; without it ``PATH#LINE``.

A row that does not parse (broken JSON, a bad CSV quote, another number of columns than the
header, bytes that are not UTF-8, a mapped field missing) is a :class:`RowError` that names the
file and line: the caller reports that row as ``intake_failed`` and goes on with the others.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from worker.core.errors import UsageError

FIELD_ROLES = ("content", "source")
Fields = Mapping[str, Sequence[str]]


class RowError(UsageError):
    """One row of a table could not be read; the rest of the table still can."""


class FieldError(UsageError, ValueError):
    """A field mapping is malformed (a usage error)."""


def parse_fields(specs: Iterable[str]) -> dict[str, list[str]]:
    """``["content=body", "source=id"]`` (or one ``"content=body,source=id"``) as ``{role: [field]}``."""
    out: dict[str, list[str]] = {}
    for spec in specs:
        for item in filter(None, (s.strip() for s in spec.split(","))):
            role, sep, name = item.partition("=")
            if not sep or role.strip() not in FIELD_ROLES or not name.strip():
                raise FieldError(
                    f"--field {item!r}: expected ROLE=FIELD with ROLE one of {', '.join(FIELD_ROLES)}"
                )
            out.setdefault(role.strip(), []).append(name.strip())
    if len(out.get("source", [])) > 1:
        raise FieldError("--field source=... may be given once")
    return out


class Table:
    """The rows of one JSON-lines or CSV file, by the line each starts on (read once, then by offset)."""

    def __init__(self, kind: str, path: str) -> None:
        self.kind, self.path = kind, path
        self.spans: dict[str, tuple[int, int]] = {}  # line number -> byte span of the row
        self.header: list[str] | None = None
        with open(path, "rb") as fh:
            raw = fh.read()
        if kind == "csv":
            self._index_csv(raw)
        else:
            self._index_lines(raw)

    def _index_lines(self, raw: bytes) -> None:
        offset = 0
        for number, line in enumerate(raw.splitlines(keepends=True), start=1):
            if line.strip():
                self.spans[str(number)] = (offset, offset + len(line))
            offset += len(line)

    def _index_csv(self, raw: bytes) -> None:
        """A record ends at a line break outside a quoted field (a quoted field may hold line
        breaks; a quote inside an unquoted field opens nothing). The first record is the header."""
        offset, start, start_line, quoted = 0, 0, 1, False
        lines = raw.splitlines(keepends=True)
        for number, line in enumerate(lines, start=1):
            if offset == start:
                start_line = number
            quoted = _still_quoted(line, quoted)
            offset += len(line)
            if not quoted or number == len(lines):
                if raw[start:offset].strip():
                    self.spans[str(start_line)] = (start, offset)
                start, quoted = offset, False
        if not self.spans:
            return
        first = next(iter(self.spans))
        header_span = self.spans.pop(first)
        try:
            self.header = self._csv_row(raw[header_span[0] : header_span[1]], first)
        except RowError:
            self.header = None
        if not self.header or len(set(self.header)) != len(self.header):
            raise RowError(f"{self.path}: the first row is no header of distinct column names")

    def names(self) -> list[str]:
        return list(self.spans)

    def row(self, key: str, fields: Fields) -> tuple[str, bytes]:
        """``(source, content)`` of the row starting on line ``key``."""
        start, end = self.spans[key]
        with open(self.path, "rb") as fh:
            fh.seek(start)
            raw = fh.read(end - start)
        if self.kind == "csv":
            assert self.header is not None
            values = self._csv_row(raw, key)
            if len(values) != len(self.header):
                raise self._error(key, f"{len(values)} columns, the header has {len(self.header)}")
            record: Any = dict(zip(self.header, values, strict=True))
            whole = json.dumps(record, ensure_ascii=False).encode()
        else:
            try:
                record = json.loads(raw)
            except UnicodeDecodeError:
                raise self._error(key, "not UTF-8") from None
            except json.JSONDecodeError as exc:
                raise self._error(key, f"not valid JSON ({exc.msg} at column {exc.colno})") from None
            whole = raw.rstrip(b"\r\n")
        source = f"{self.path}#{key}"
        if "source" in fields:
            source = _text(self._field(record, fields["source"][0], key))
        if "content" not in fields:
            return source, whole
        parts = [_text(self._field(record, name, key)) for name in fields["content"]]
        return source, "\n\n".join(parts).encode("utf-8", errors="surrogatepass")

    def _csv_row(self, raw: bytes, key: str) -> list[str]:
        try:
            text = raw.decode("utf-8-sig" if key == "1" else "utf-8")
        except UnicodeDecodeError as exc:
            raise self._error(key, f"not UTF-8 (byte {exc.start} of the row)") from None
        try:
            rows = list(csv.reader(io.StringIO(text, newline=""), strict=True))
        except csv.Error as exc:
            raise self._error(key, f"not valid CSV ({exc})") from None
        if len(rows) != 1:
            raise self._error(key, "not valid CSV (an unterminated quote?)")
        return rows[0]

    def _field(self, record: Any, name: str, key: str) -> Any:
        value = record
        for part in name.split(".") if self.kind == "jsonl" else [name]:
            if not isinstance(value, dict) or part not in value or value[part] is None:
                raise self._error(key, f"no field {name!r}")
            value = value[part]
        return value

    def _error(self, key: str, why: str) -> RowError:
        return RowError(f"{self.kind}:{self.path} line {key}: intake_failed: {why}")


def _still_quoted(line: bytes, quoted: bool) -> bool:
    """Whether a quoted field is still open at the end of ``line`` (``quoted``: open at its start)."""
    at_field_start = not quoted
    i = 0
    while i < len(line):
        char = line[i : i + 1]
        if quoted:
            if char == b'"':
                if line[i + 1 : i + 2] == b'"':
                    i += 1  # an escaped quote
                else:
                    quoted = False
        elif char == b'"' and at_field_start:
            quoted = True
        at_field_start = char == b","
        i += 1
    return quoted


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def is_table(kind: str) -> bool:
    return kind in ("jsonl", "csv")
