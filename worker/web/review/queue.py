"""What the queue and audit pages read: gates waiting for a person, filtered and counted."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from sqlalchemy import func, or_
from sqlmodel import Session, col, select

from worker.adapters.db import AuditEvent, Gate, not_reviewed, utcnow
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


def _waiting_clause() -> Any:
    """In review, or quarantined and no person has decided yet."""
    return or_(col(Gate.status) == "review", (col(Gate.status) == "quarantine") & not_reviewed())


def waiting_gates(rt: Runtime, filters: Filters, limit: int = 200) -> list[Gate]:
    """Gates waiting for a person that match ``filters``, oldest first."""
    stmt = select(Gate).where(_waiting_clause())
    if filters.decision:
        stmt = stmt.where(col(Gate.status) == filters.decision)
    if filters.policy:
        stmt = stmt.where(col(Gate.policy_id) == filters.policy)
    if filters.source:
        stmt = stmt.where(col(Gate.source).contains(filters.source, autoescape=True))
    _label, at_least, at_most = AGES[filters.age]
    now = utcnow()
    if at_least is not None:
        stmt = stmt.where(col(Gate.updated_at) <= now - timedelta(hours=at_least))
    if at_most is not None:
        stmt = stmt.where(col(Gate.updated_at) > now - timedelta(hours=at_most))
    with Session(rt.repo.engine, expire_on_commit=False) as session:
        return list(session.exec(stmt.order_by(col(Gate.updated_at)).limit(limit)).all())


def counts(rt: Runtime) -> dict[tuple[str, str], int]:
    """Gates waiting for a person by (queue, policy), over everything (filters aside)."""
    stmt = (
        select(Gate.status, Gate.policy_id, func.count())
        .where(_waiting_clause())
        .group_by(col(Gate.status), col(Gate.policy_id))
    )
    with Session(rt.repo.engine) as session:
        return {(str(s), str(p)): int(n) for s, p, n in session.exec(stmt).all()}


def release_requested(rt: Runtime, gate_ids: list[str]) -> set[str]:
    """Which of ``gate_ids`` have a release request waiting for a second reviewer."""
    if not gate_ids:
        return set()
    stmt = select(AuditEvent.gate_id).where(
        col(AuditEvent.gate_id).in_(gate_ids), AuditEvent.event == RELEASE_REQUESTED
    )
    with Session(rt.repo.engine) as session:
        return set(session.exec(stmt).all())


def recent_events(rt: Runtime, limit: int = 300, people_only: bool = True) -> list[AuditEvent]:
    """The latest audit events, newest first (by default people's: reviews and release requests)."""
    stmt = select(AuditEvent)
    if people_only:
        stmt = stmt.where(col(AuditEvent.actor).startswith("person:"))
    with Session(rt.repo.engine, expire_on_commit=False) as session:
        return list(session.exec(stmt.order_by(col(AuditEvent.id).desc()).limit(limit)).all())
