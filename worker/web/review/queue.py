"""What the queue and audit pages read: gates waiting for a person, filtered and counted."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from worker.adapters.db import AuditEvent, Gate, utcnow
from worker.pipeline.runtime import Runtime
from worker.pipeline.two_person import RELEASE_REQUESTED

QUEUES = ("quarantine", "review")
# Age filter: (label, at least, at most) in hours.
AGES: dict[str, tuple[str, float | None, float | None]] = {
    "": ("any age", None, None),
    "lt1h": ("under an hour", None, 1),
    "1h-24h": ("1 to 24 hours", 1, 24),
    "gt24h": ("over a day", 24, None),
    "gt7d": ("over a week", 24 * 7, None),
}


@dataclass(frozen=True)
class Filters:
    decision: str = ""  # "", "quarantine" or "review"
    policy: str = ""
    source: str = ""  # a substring of the source
    age: str = ""

    @classmethod
    def parse(cls, params: Any) -> Filters:
        decision = params.get("decision", "")
        age = params.get("age", "")
        return cls(
            decision=decision if decision in QUEUES else "",
            policy=str(params.get("policy", ""))[:64],
            source=str(params.get("source", ""))[:200],
            age=age if age in AGES else "",
        )


def waiting_gates(rt: Runtime, filters: Filters, limit: int = 200) -> list[Gate]:
    """Gates waiting for a person that match ``filters``, oldest first."""
    _label, at_least, at_most = AGES[filters.age]
    now = utcnow()
    return rt.repo.waiting_gates(
        decision=filters.decision,
        policy=filters.policy,
        source=filters.source,
        updated_before=None if at_least is None else now - timedelta(hours=at_least),
        updated_after=None if at_most is None else now - timedelta(hours=at_most),
        limit=limit,
    )


def counts(rt: Runtime) -> dict[tuple[str, str], int]:
    """Gates waiting for a person by (queue, policy), over everything (filters aside)."""
    return rt.repo.waiting_counts()


def release_requested(rt: Runtime, gate_ids: list[str]) -> set[str]:
    """Which of ``gate_ids`` have a release request waiting for a second reviewer."""
    return rt.repo.gates_with_event(gate_ids, RELEASE_REQUESTED)


def recent_events(rt: Runtime, limit: int = 300, people_only: bool = True) -> list[AuditEvent]:
    """The latest audit events, newest first (by default people's: reviews and release requests)."""
    return rt.repo.recent_events(limit, people_only)
