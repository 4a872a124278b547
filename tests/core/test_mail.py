"""The decoded text parts of an e-mail, as the local model detectors read them besides its raw bytes."""

from __future__ import annotations

from email.message import EmailMessage

import pytest

from worker.core.mail import decoded_text_parts

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
