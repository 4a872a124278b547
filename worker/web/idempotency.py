"""``Idempotency-Key`` for HTTP intake: a retried request gets the first answer, not a new submission.

A key is scoped to the token that sent it (two clients may pick the same key) and bound to a
digest of what the request asked for: the same key with another request is refused (422), as the
IETF ``Idempotency-Key`` draft says. The row is written after the gate rows exist, so a crash in
between leaves no key pointing at nothing; a retry then simply submits again, and the gate rows,
keyed by sha256 and policy, are found rather than duplicated.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

from worker.adapters.db import Engine
from worker.adapters.db.intake_keys import IntakeKey, IntakeKeyRepo
from worker.core.errors import UsageError

MAX_KEY_CHARS = 255


@dataclass(frozen=True)
class Answer:
    submission_id: str
    gate_ids: list[str]
    replayed: bool = False


class KeyReusedError(UsageError):
    """The key was used before with a different request."""


def scoped_key(scope: str, key: str) -> str:
    return hashlib.sha256(f"{scope}\0{key}".encode()).hexdigest()


class IntakeKeys:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.repo = IntakeKeyRepo(engine)

    def find(self, key: str, request_sha256: str) -> Answer | None:
        row = self.repo.get(key)
        if row is None:
            return None
        if row.request_sha256 != request_sha256:
            raise KeyReusedError
        return Answer(row.submission_id, json.loads(row.gate_ids), replayed=True)

    def remember(self, key: str, request_sha256: str, answer: Answer, metadata: str) -> Answer:
        """Store ``answer`` under ``key``; when a concurrent request stored one first, that one wins."""
        row = IntakeKey(
            key=key,
            request_sha256=request_sha256,
            submission_id=answer.submission_id,
            gate_ids=json.dumps(answer.gate_ids),
            metadata_json=metadata,
        )
        if not self.repo.insert(row):
            winner = self.find(key, request_sha256)
            if winner is not None:
                return winner
        return answer
