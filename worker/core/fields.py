"""A JSON document written in escapes, read as its text: one ``path: value`` line per string.

A tool's answer is often JSON, and Python's ``json.dumps`` writes every character outside ASCII as
``\\uXXXX`` by default: a review in Russian or Chinese is, in the raw bytes, a run of escapes that
neither model can read (dev's steering instructions in ten languages other than English, escaped
in a JSON answer: 40.6 % caught against 75.6 % written plainly, ``benchmarks/json_answers.py``).
:func:`json_fields` gives such a document as its reader sees it: each string, escapes undone, on a
line ``key.path[0].name: value`` (the field's name beside its text). The models read this view
instead of the raw windows (:func:`worker.core.views.scanned_views`): every character of a JSON
document that can carry words is in a key or a string, so the view holds all of it; numbers,
booleans and nulls are left out. A key repeated in one object keeps every value (``json.loads``
would keep the last, and an earlier one could hide an order). A document written without escapes
is read as it is: its raw windows are already readable. The pre-check reads JSON through its own
layer (:func:`worker.core.decode.json_text`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

MAX_BYTES = 8 << 20  # larger documents are read as raw windows only (parsed whole: ~3x its size)
_OPEN = (b"{", b"[")
_LEAD = b"\xef\xbb\xbf \t\r\n"  # a byte-order mark and blanks before the document
# A \u escape of a character outside ASCII (U+0080 and above): text the raw bytes hide.
_ESCAPED = re.compile(rb"\\u(?:00[89a-fA-F]|0[1-9a-fA-F][0-9a-fA-F]|[1-9a-fA-F][0-9a-fA-F]{2})[0-9a-fA-F]")


class _Object(list):  # type: ignore[type-arg]
    """An object's ``(key, value)`` pairs in order, repeated keys kept (``object_pairs_hook``)."""


def json_fields(data: bytes) -> bytes | None:
    """The strings of a JSON document (or JSON Lines: one document a line) that writes text outside
    ASCII as escapes, as UTF-8 lines ``path: value``; None for anything else: not JSON, no such
    escape, no string, or over :data:`MAX_BYTES`."""
    if len(data) > MAX_BYTES or data[:64].lstrip(_LEAD)[:1] not in _OPEN or not _ESCAPED.search(data):
        return None
    documents = _documents(data)
    if documents is None:
        return None
    lines = [f"{path}: {value}" for path, value in _strings(documents)]
    return "\n".join(lines).encode("utf-8", errors="replace") if lines else None


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
