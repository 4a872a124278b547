"""Signatures on allowed messages: consumers reject a message the gate did not publish.

``HMAC-SHA256(key, "canary-allowed:v1\\n" + submission_id + "\\n" + sha256 + "\\n" + decision)``,
hex-encoded, in the message's ``signature`` field beside ``decision``. The submission id names
the message, the sha256 pins the bytes a consumer fetches, the decision says what was decided:
a forged or replayed-under-another-artifact message fails the check.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping
from typing import Any

SIGNATURE_VERSION = "canary-allowed:v1"


def signed_text(submission_id: str, sha256: str, decision: str) -> bytes:
    """The exact bytes that are signed (newline-separated; none of the fields holds a newline)."""
    for field in (submission_id, sha256, decision):
        if "\n" in field:
            raise ValueError("a signed field holds a newline")
    return f"{SIGNATURE_VERSION}\n{submission_id}\n{sha256}\n{decision}".encode()


def sign(key: bytes, submission_id: str, sha256: str, decision: str) -> str:
    """The hex HMAC-SHA256 of one allowed message's identity."""
    return hmac.new(key, signed_text(submission_id, sha256, decision), hashlib.sha256).hexdigest()


def verify(key: bytes, message: Mapping[str, Any]) -> bool:
    """True when ``message`` carries a valid signature for its submission id, sha256 and decision."""
    fields = [message.get(name) for name in ("submission_id", "sha256", "decision", "signature")]
    if not all(isinstance(value, str) and value for value in fields):
        return False
    sub, sha, decision, signature = (str(v) for v in fields)
    try:
        expected = sign(key, sub, sha, decision)
    except ValueError:
        return False
    return hmac.compare_digest(expected, signature)
