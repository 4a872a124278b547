"""The text parts of an e-mail as its reader sees them: base64 and quoted-printable undone.

Many mailers send even a plain-text body base64-encoded. The pre-check reads such bodies
through its transport layers (:mod:`worker.core.decode`, which keeps offsets into the
artifact); the model and LLM detectors read windows of the artifact's bytes, where a base64
body is letters and digits with nothing to judge. :func:`decoded_text_parts` gives them the
decoded text too (read in addition to every window of the raw bytes, so their coverage of the
artifact is unchanged).
"""

from __future__ import annotations

import email
import email.policy
import re

# A MIME part header declaring a transport encoding the reader does not see. Anything else
# (7bit, 8bit, binary, no header) is already readable as it stands.
_ENCODED_PART = re.compile(
    rb"^content-transfer-encoding:[ \t]*(?:base64|quoted-printable)[ \t]*\r?$", re.I | re.M
)


def decoded_text_parts(data: bytes) -> list[bytes]:
    """The decoded bodies (UTF-8) of a message's base64 or quoted-printable ``text/*`` parts.

    ``[]`` for anything that declares no such part, so other artifacts cost one regex search.
    Attachments of other types (images, archives) are left to the pre-check.
    """
    if not _ENCODED_PART.search(data):
        return []
    message = email.message_from_bytes(data, policy=email.policy.compat32)
    parts: list[bytes] = []
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
        parts.append(text.encode("utf-8"))
    return parts
