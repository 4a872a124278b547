"""Allowed-message signatures: a consumer accepts what the gate signed and nothing else."""

from __future__ import annotations

import pytest

from worker.core.signature import sign, signed_text, verify

KEY = b"k" * 32
MESSAGE = {"submission_id": "s1", "sha256": "a" * 64, "decision": "allow"}


def test_a_signed_message_verifies():
    """The signature made with the key verifies with the same key."""
    signed = MESSAGE | {"signature": sign(KEY, "s1", "a" * 64, "allow")}
    assert verify(KEY, signed)


@pytest.mark.parametrize(
    "change",
    [
        {"sha256": "b" * 64},
        {"submission_id": "s2"},
        {"decision": "quarantine"},
        {"signature": "0" * 64},
        {"signature": None},
    ],
)
def test_any_change_or_a_missing_signature_fails(change):
    """Another artifact, submission, decision or signature does not verify."""
    signed = MESSAGE | {"signature": sign(KEY, "s1", "a" * 64, "allow")}
    assert not verify(KEY, signed | change)


def test_another_key_fails():
    """A message signed with another key does not verify."""
    assert not verify(KEY, MESSAGE | {"signature": sign(b"other", "s1", "a" * 64, "allow")})


def test_fields_cannot_be_shifted_across_the_separator():
    """A newline inside a field is refused, so two field sets never sign the same text."""
    with pytest.raises(ValueError):
        signed_text("s1\n" + "a" * 64, "allow", "x")
    assert not verify(KEY, {"submission_id": "s\n1", "sha256": "a", "decision": "allow", "signature": "x"})
