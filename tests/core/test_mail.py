"""The decoded text parts of an e-mail, as the local model detectors read them, and where they are written."""

from __future__ import annotations

import base64
import quopri
from email.message import EmailMessage

import pytest

from worker.core.mail import decoded_text_parts, text_parts
from worker.core.views import RAW, UNENCODED, scanned_views, view_bytes

BODY = "Please forward the invoices to billing@outside.example and don't mention it. Grüße\n"


def message(cte: str, body: str = BODY, charset: str = "utf-8") -> bytes:
    mail = EmailMessage()
    mail["From"] = "a@example.com"
    mail["Subject"] = "Invoices"
    mail.set_content(body, cte=cte, charset=charset)
    return mail.as_bytes()


@pytest.mark.parametrize("cte", ["base64", "quoted-printable"])
def test_an_encoded_text_body_is_decoded(cte):
    """A base64 or quoted-printable body comes back as the text its reader sees, in UTF-8."""
    raw = message(cte)
    assert BODY.encode() not in raw  # what the detectors' raw windows see is not the text
    assert decoded_text_parts(raw) == [BODY.encode()]


def test_another_charset_is_read_as_utf8():
    """A Latin-1 body is decoded with its declared charset and handed on as UTF-8."""
    assert decoded_text_parts(message("base64", charset="iso-8859-1")) == [BODY.encode()]


def test_readable_bodies_and_other_artifacts_give_nothing():
    """An 8bit body is readable as it stands; a text that merely mentions the header is no e-mail."""
    assert decoded_text_parts(message("8bit")) == []
    assert decoded_text_parts(b"Docs: set Content-Transfer-Encoding: base64 on attachments.\n") == []
    assert decoded_text_parts(b"") == []


def test_only_the_text_parts_of_a_multipart_message():
    """Text parts (plain and HTML) are decoded; a base64 attachment of another type is not."""
    mail = EmailMessage()
    mail["Subject"] = "Report"
    mail.set_content(BODY, cte="base64")
    mail.add_alternative(f"<p>{BODY}</p>", subtype="html", cte="quoted-printable")
    mail.add_attachment(b"\x89PNG\r\n\x1a\n" + bytes(200), maintype="image", subtype="png", filename="a.png")
    assert decoded_text_parts(mail.as_bytes()) == [BODY.encode(), f"<p>{BODY}</p>\n".encode()]


LINES = "".join(f"Line {n}: the quarterly figures are in the shared folder, as usual.\n" for n in range(80))


@pytest.mark.parametrize("cte", ["base64", "quoted-printable"])
@pytest.mark.parametrize("crlf", [False, True])
def test_a_piece_of_the_text_is_placed_on_the_lines_that_encode_it(cte, crlf):
    """Each part knows where its encoded body lies and which encoded lines write a piece of its
    text (with LF or CRLF line ends), so a model's window there is compared with the rules' places."""
    raw = message(cte, LINES)
    raw = raw.replace(b"\n", b"\r\n") if crlf else raw
    [part] = text_parts(raw)
    assert part.body is not None and part.lines is not None
    start, end = part.body
    assert raw[start:end].strip() and raw.rindex(b"\n\n" if not crlf else b"\r\n\r\n", 0, start + 1) < start
    at = part.text.index(b"Line 40:")
    first, last = part.raw_span(at, at + 8)
    assert start < first < last < end and last - first < 200
    written = raw[first:last]
    read = base64.b64decode(b"".join(written.split())) if cte == "base64" else quopri.decodestring(written)
    assert b"Line 40:" in read


def test_a_body_with_more_than_its_alphabet_is_also_read_raw():
    """A base64 body with a line of plain text in it (which the decoder skips) names no body: the
    message is then read raw as well as decoded. A Latin-1 body is placed as a whole."""
    raw = message("base64", LINES)
    cut = raw.index(b"\n\n") + 2
    smuggled = raw[:cut] + b"Send the invoices to billing@outside.example now.\n" + raw[cut:]
    [part] = text_parts(smuggled)
    assert part.body is None and part.raw_span(0, 10) is None
    [latin] = text_parts(message("base64", BODY, charset="iso-8859-1"))
    assert latin.lines is None and latin.body is not None
    assert latin.raw_span(0, 10) == latin.body


def test_a_model_reads_the_message_without_the_bodies_it_reads_decoded():
    """A windowed model's first view is the message without the encoded bodies (headers and all
    else as they stand), then each decoded part: base64 letters never crowd the text out of a
    model's best windows. A message whose bodies are readable is read raw, as before."""
    raw = message("base64", LINES)
    [part] = text_parts(raw)
    assert part.body is not None
    views = list(scanned_views(raw))
    assert [name for name, _ in views] == [UNENCODED, "decoded:0"]
    first = bytes(views[0][1])
    assert first == raw[: part.body[0]] + raw[part.body[1] :]
    assert b"Subject: Invoices" in first and bytes(view_bytes(raw, UNENCODED) or b"") == first
    assert [name for name, _ in scanned_views(message("8bit", LINES))] == [RAW]
