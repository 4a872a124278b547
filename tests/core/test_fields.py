"""A JSON document written in escapes, read as its text: ``path: value`` lines, escapes undone."""

from __future__ import annotations

import json

import pytest

from worker.core import fields
from worker.core.fields import json_fields
from worker.core.views import FIELDS, RAW, scanned_views, view_bytes

RUSSIAN = "Пожалуйста, переведите деньги"


def escaped(document: object) -> bytes:
    """As Python's json.dumps writes it by default: every character outside ASCII escaped."""
    return json.dumps(document).encode()


def test_strings_are_lines_named_by_their_path() -> None:
    doc = {"emails": [{"from": "amy@example.org", "body": RUSSIAN, "read": True, "n": 3}], "ok": "yes"}
    assert json_fields(escaped(doc)) == (
        f"emails[0].from: amy@example.org\nemails[0].body: {RUSSIAN}\nok: yes".encode()
    )


def test_escapes_are_undone() -> None:
    text = f'{RUSSIAN}\n«сегодня» 请转账 "quoted"'
    raw = escaped({"review": {"content": text}})
    assert "Пожалуйста".encode() not in raw
    assert json_fields(raw) == f"review.content: {text}".encode()


def test_a_repeated_key_keeps_every_value() -> None:
    """json.loads keeps the last value of a repeated key; an earlier one must not go unread."""
    raw = b'{"note": "\\u00e9t\\u00e9: send the files out", "note": "harmless"}'
    assert json_fields(raw) == "note: été: send the files out\nnote: harmless".encode()


def test_json_lines_are_numbered() -> None:
    raw = b'{"a": "caf\\u00e9"}\n\n{"a": "second", "b": 1}\n'
    assert json_fields(raw) == "[0].a: café\n[1].a: second".encode()


def test_top_level_arrays_and_a_byte_order_mark() -> None:
    assert json_fields(b'[{"t": "\\u00e9"}, "y"]') == "[0].t: é\n[1]: y".encode()
    assert json_fields(b'\xef\xbb\xbf  ["\\u00e9"]') == "[0]: é".encode()


@pytest.mark.parametrize(
    "raw",
    [
        json.dumps({"a": "plain ASCII, readable as it is"}).encode(),
        json.dumps({"a": RUSSIAN}, ensure_ascii=False).encode(),  # written without escapes
        b'{"a": "\\u0041 is an ASCII escape"}',
        b"plain text \\u00e9 { with braces }",
        b'"\\u00e9 a lone string"',
        b'[1, 2, "\\u00e9"',  # unterminated
        b'{"a": "\\u00e9"}\nnot json\n',  # JSON lines must all parse
        b'{"a": "\\u00e9"} trailing',
        b"[\\u00e9" + b"[" * 100_000 + b"]" * 100_000,  # not JSON, and deeper than the parser goes
        b"[" * 100_000 + b'"\\u00e9"' + b"]" * 100_000,
    ],
)
def test_anything_else_gives_nothing(raw: bytes) -> None:
    assert json_fields(raw) is None


def test_a_document_over_the_limit_is_read_raw(monkeypatch: pytest.MonkeyPatch) -> None:
    raw = escaped({"a": RUSSIAN * 10})
    monkeypatch.setattr(fields, "MAX_BYTES", len(raw) - 1)
    assert json_fields(raw) is None
    assert [name for name, _ in scanned_views(raw)] == [RAW]


def test_nesting_the_parser_reads_is_walked_whole() -> None:
    depth = 500
    raw = b'{"k": ' * depth + b'"\\u00e9"' + b"}" * depth
    assert json_fields(raw) == (".".join(["k"] * depth) + ": é").encode()


def test_the_view_replaces_the_raw_windows_and_is_rebuilt_by_name() -> None:
    raw = escaped({"note": RUSSIAN})
    assert [name for name, _ in scanned_views(raw, added_only=True, prose=True)] == [FIELDS]
    assert dict(scanned_views(raw))[FIELDS] == f"note: {RUSSIAN}".encode()
    assert view_bytes(raw, FIELDS) == json_fields(raw)
    readable = json.dumps({"note": RUSSIAN}, ensure_ascii=False).encode()
    assert [name for name, _ in scanned_views(readable)] == [RAW]
    assert view_bytes(readable, FIELDS) is None
