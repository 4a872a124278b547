"""Reads for people and operators: the review queue and trail, and gates that should have moved.

A part of ``GateRepo``, like ``gauges``. Errors are not translated here: the review pages, the
``canary review audit|export`` commands and ``canary stuck`` report a driver error as before.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import func, or_
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from worker.adapters.db.tables import OPEN_STATUSES, REVIEWED, AuditEvent, Gate, Submission, not_reviewed


def _waiting_clause() -> Any:
    """In review, or quarantined and no person has decided yet."""
    return or_(col(Gate.status) == "review", (col(Gate.status) == "quarantine") & not_reviewed())


class GateReads:
    """The review queue, the audit trail and stuck gates (a part of ``GateRepo``)."""

    engine: Engine

    def waiting_gates(
        self,
        decision: str = "",
        policy: str = "",
        source: str = "",
        updated_before: datetime | None = None,
        updated_after: datetime | None = None,
        limit: int = 200,
    ) -> list[Gate]:
        """Gates waiting for a person, filtered (``source`` is a substring), oldest first."""
        stmt = select(Gate).where(_waiting_clause())
        if decision:
            stmt = stmt.where(col(Gate.status) == decision)
        if policy:
            stmt = stmt.where(col(Gate.policy_id) == policy)
        if source:
            stmt = stmt.where(col(Gate.source).contains(source, autoescape=True))
        if updated_before is not None:
            stmt = stmt.where(col(Gate.updated_at) <= updated_before)
        if updated_after is not None:
            stmt = stmt.where(col(Gate.updated_at) > updated_after)
        with Session(self.engine, expire_on_commit=False) as session:
            return list(session.exec(stmt.order_by(col(Gate.updated_at)).limit(limit)).all())

    def waiting_counts(self) -> dict[tuple[str, str], int]:
        """Gates waiting for a person by (queue, policy)."""
        stmt = (
            select(Gate.status, Gate.policy_id, func.count())
            .where(_waiting_clause())
            .group_by(col(Gate.status), col(Gate.policy_id))
        )
        with Session(self.engine) as session:
            return {(str(s), str(p)): int(n) for s, p, n in session.exec(stmt).all()}

    def gates_with_event(self, gate_ids: list[str], event: str) -> set[str]:
        """Which of ``gate_ids`` have an audit event named ``event``."""
        if not gate_ids:
            return set()
        stmt = select(AuditEvent.gate_id).where(
            col(AuditEvent.gate_id).in_(gate_ids), AuditEvent.event == event
        )
        with Session(self.engine) as session:
            return set(session.exec(stmt).all())

    def recent_events(self, limit: int = 300, people_only: bool = True) -> list[AuditEvent]:
        """The latest audit events, newest first (by default only people's)."""
        stmt = select(AuditEvent)
        if people_only:
            stmt = stmt.where(col(AuditEvent.actor).startswith("person:"))
        with Session(self.engine, expire_on_commit=False) as session:
            return list(session.exec(stmt.order_by(col(AuditEvent.id).desc()).limit(limit)).all())

    def audit_events(self, gate_id: str | None = None) -> list[AuditEvent]:
        """The audit trail in order: of one gate, or of every gate."""
        stmt = select(AuditEvent)
        if gate_id:
            stmt = stmt.where(AuditEvent.gate_id == gate_id)
        with Session(self.engine, expire_on_commit=False) as session:
            return list(session.exec(stmt.order_by(col(AuditEvent.id))).all())

    def reviewed_events(self) -> list[AuditEvent]:
        """Every person's decision event (``review:<decision>``), in order."""
        stmt = (
            select(AuditEvent).where(col(AuditEvent.event).startswith(REVIEWED)).order_by(col(AuditEvent.id))
        )
        with Session(self.engine, expire_on_commit=False) as session:
            return list(session.exec(stmt).all())

    def gates_by_id(self, gate_ids: list[str]) -> dict[str, Gate]:
        """The gates of ``gate_ids`` that exist, by id."""
        if not gate_ids:
            return {}
        with Session(self.engine, expire_on_commit=False) as session:
            return {g.id: g for g in session.exec(select(Gate).where(col(Gate.id).in_(gate_ids))).all()}

    def stale(self, before: datetime) -> tuple[list[Gate], dict[str, str], dict[str, tuple[str, str]]]:
        """Open gates untouched since ``before``, then the gates of allowed submissions created
        before it and not published; the submission id of each of the latter; and each gate's
        last audit (actor, event)."""
        with Session(self.engine, expire_on_commit=False) as session:
            gates = list(
                session.exec(
                    select(Gate).where(col(Gate.status).in_(OPEN_STATUSES), col(Gate.updated_at) < before)
                ).all()
            )
            subs = session.exec(
                select(Submission).where(
                    Submission.status == "allow",
                    Submission.published == False,  # noqa: E712
                    col(Submission.created_at) < before,
                )
            ).all()
            unpublished = {gid: sub.id for sub in subs for gid in sub.gates}
            if unpublished:
                gates.extend(session.exec(select(Gate).where(col(Gate.id).in_(list(unpublished)))).all())
            last = _last_events(session, [g.id for g in gates])
        return gates, unpublished, last

    def submission_gates(self, submission_id: str) -> list[str]:
        """The gate ids of a submission ([] when unknown)."""
        with Session(self.engine) as session:
            sub = session.get(Submission, submission_id)
            return sub.gates if sub else []


def _last_events(session: Session, gate_ids: Sequence[str]) -> dict[str, tuple[str, str]]:
    if not gate_ids:
        return {}
    rows = session.exec(
        select(AuditEvent).where(col(AuditEvent.gate_id).in_(list(gate_ids))).order_by(col(AuditEvent.id))
    ).all()
    return {row.gate_id: (row.actor, row.event) for row in rows}
