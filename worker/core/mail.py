"""The text parts of an e-mail as its reader sees them: base64 and quoted-printable undone.

Many mailers send even a plain-text body base64-encoded. The pre-check reads such bodies
through its transport layers (:mod:`worker.core.decode`, which keeps offsets into the
artifact); the model and LLM detectors read windows of the artifact's bytes, where a base64
body is letters and digits with nothing to judge. :func:`text_parts` gives them the decoded
text, and where each part's encoded body lies in the message: a windowed model reads the
message without the bodies it reads decoded (:func:`worker.core.views.scanned_views`), so
their letters and digits never crowd the text out of its best windows. The coverage of the
artifact is unchanged: every byte is read, an encoded body through its decoded text.
"""

from __future__ import annotations

import binascii
import email
import email.policy
import re
from dataclasses import dataclass

from worker.core.offsets import PieceBuilder, Pieces

# A MIME part header declaring a transport encoding the reader does not see. Anything else
# (7bit, 8bit, binary, no header) is already readable as it stands.
_ENCODED_PART = re.compile(
    rb"^content-transfer-encoding:[ \t]*(?:base64|quoted-printable)[ \t]*\r?$", re.I | re.M
)
# A base64 body that holds nothing but its alphabet: its decoded text says all it says. Anything
# else in it (a line of plain text the decoder skips) is left to the raw windows as well.
_CLEAN_BASE64 = re.compile(rb"[A-Za-z0-9+/=\s]*")


@dataclass(frozen=True)
class TextPart:
    """One decoded ``text/*`` part: its text (UTF-8) and, when found, ``body``, the ``[start, end)``
    of its encoded body in the message's bytes, its decoded text holding all that body says.

    ``lines``: each piece of the text mapped to the encoded line of the message that writes it
    (:func:`encoded_lines`), when the text is the body's lines decoded one by one (base64 wrapped at
    a multiple of 4, quoted-printable, a UTF-8 or ASCII charset); then :meth:`raw_span` places a
    piece of the text on the lines that encode it."""

    text: bytes
    body: tuple[int, int] | None
    lines: Pieces | None = None

    def raw_span(self, start: int, end: int) -> tuple[int, int] | None:
        """Where ``text[start:end]`` is written in the message: the encoded lines that hold it,
        first to last (the whole body where the lines cannot say); ``None`` without a body."""
        if self.body is None:
            return None
        if self.lines is None or not 0 <= start < end <= len(self.text):
            return self.body
        return self.lines.span(start, end)


def text_parts(data: bytes) -> list[TextPart]:
    """The decoded bodies of a message's base64 or quoted-printable ``text/*`` parts, in order.

    ``[]`` for anything that declares no such part, so other artifacts cost one regex search.
    Attachments of other types (images, archives) are left to the pre-check. ``body`` is ``None``
    where the encoded body cannot be found as it stands in ``data`` or holds more than its
    encoding's alphabet (base64): such a body is also read raw.
    """
    if not _ENCODED_PART.search(data):
        return []
    message = email.message_from_bytes(data, policy=email.policy.compat32)
    parts: list[TextPart] = []
    cursor = 0  # parts come in order: each body is looked for after the one before
    for part in message.walk():
        if part.is_multipart() or part.get_content_maintype() != "text":
            continue
        encoding = str(part.get("Content-Transfer-Encoding", "")).strip().lower()
        payload = part.get_payload(decode=True) if encoding in ("base64", "quoted-printable") else None
        if not isinstance(payload, bytes) or not payload:
            continue
        charset = part.get_content_charset() or "utf-8"
        try:
            text = payload.decode(charset, errors="replace")
        except LookupError:  # an unknown charset name: read it as UTF-8
            text = payload.decode("utf-8", errors="replace")
        utf8 = text.encode("utf-8")
        body = _body_span(data, part.get_payload(), encoding, cursor)
        if body is None:
            parts.append(TextPart(utf8, None))
            continue
        cursor = body[1]
        lines = encoded_lines(data[body[0] : body[1]], encoding, utf8, body[0]) if utf8 == payload else None
        parts.append(TextPart(utf8, body, lines))
    return parts


def encoded_lines(body: bytes, encoding: str, text: bytes, base: int = 0) -> Pieces | None:
    """The text of a ``base64`` or ``quoted-printable`` ``body`` (found at byte ``base``) mapped
    line by line: the piece each line decodes to maps, as a whole, to that line; ``None`` where its
    lines decoded one by one are not ``text`` (the whole body decoded)."""
    builder, position = PieceBuilder(), base
    try:
        for line in body.splitlines(keepends=True):
            piece = binascii.a2b_base64(line.strip()) if encoding == "base64" else binascii.a2b_qp(line)
            builder.add(piece, position, position + len(line), False)
            position += len(line)
    except (binascii.Error, ValueError):
        return None
    decoded, pieces = builder.build()
    return pieces if decoded == text else None


def _body_span(data: bytes, encoded: object, encoding: str, cursor: int) -> tuple[int, int] | None:
    """Where the part's encoded body ``encoded`` (as the parser holds it) lies in ``data`` from
    ``cursor`` on, if it is there as it stands and, for base64, holds only its alphabet."""
    if not isinstance(encoded, str) or not encoded.strip():
        return None
    raw = encoded.encode("utf-8", "surrogateescape")  # compat32 holds undecodable bytes as escapes
    if encoding == "base64" and _CLEAN_BASE64.fullmatch(raw) is None:
        return None
    start = data.find(raw, cursor)
    return None if start < 0 else (start, start + len(raw))


def decoded_text_parts(data: bytes) -> list[bytes]:
    """The decoded text of each of :func:`text_parts`, what a reader of the message sees."""
    return [part.text for part in text_parts(data)]
