"""The suppressions table and its repository (see ``worker.pipeline.suppressions`` for the rules).

Errors are not translated here: a driver error reaches the caller as before the move.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime

from sqlalchemy.engine import Engine
from sqlmodel import Field, Session, SQLModel, col, select

from worker.adapters.db.tables import AuditEvent, utcnow


class Suppression(SQLModel, table=True):
    """One suppressed piece of evidence: rule, file and content hash under one policy."""

    __tablename__ = "suppressions"

    id: str = Field(default_factory=lambda: uuid.uuid4().hex[:16], primary_key=True, max_length=16)
    policy_id: str = Field(index=True)
    rule_id: str
    path: str = ""
    content_sha256: str = Field(max_length=64)
    reason: str
    created_by: str
    from_gate: str = Field(max_length=32)
    created_at: datetime = Field(default_factory=utcnow)
    expires_at: datetime
    revoked_at: datetime | None = None
    revoked_by: str | None = None


class SuppressionRepo:
    """Reads and writes of suppressions; every change is audited on the gate it came from."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        Suppression.__table__.create(engine, checkfirst=True)  # type: ignore[attr-defined]

    def add(self, made: Sequence[Suppression], person: str) -> None:
        """Store ``made`` with one ``suppression:added`` audit event each, in one transaction."""
        with Session(self.engine, expire_on_commit=False) as session:
            for s in made:
                session.add(s)
            session.flush()
            for s in made:
                detail = (
                    f"suppression={s.id} rule={s.rule_id} path={s.path} sha256={s.content_sha256[:16]}"
                    f" until={s.expires_at.date()}"
                )
                session.add(
                    AuditEvent(
                        gate_id=s.from_gate,
                        event="suppression:added",
                        actor=f"person:{person}",
                        detail=detail,
                    )
                )
            session.commit()

    def all(self) -> list[Suppression]:
        """Every suppression ever recorded, oldest first."""
        with Session(self.engine, expire_on_commit=False) as session:
            return list(session.exec(select(Suppression).order_by(col(Suppression.created_at))).all())

    def not_revoked(self, policy_id: str) -> list[Suppression]:
        """The suppressions of ``policy_id`` nobody revoked (expired ones included)."""
        stmt = select(Suppression).where(
            Suppression.policy_id == policy_id, col(Suppression.revoked_at).is_(None)
        )
        with Session(self.engine, expire_on_commit=False) as session:
            return list(session.exec(stmt).all())

    def revoke(self, suppression_id: str, person: str) -> Suppression | None:
        """Revoke an active suppression, audited (``suppression:revoked``); None when there is none."""
        with Session(self.engine, expire_on_commit=False) as session:
            found = session.get(Suppression, suppression_id)
            if found is None or found.revoked_at is not None:
                return None
            found.revoked_at, found.revoked_by = utcnow(), person
            session.add(found)
            session.add(
                AuditEvent(
                    gate_id=found.from_gate,
                    event="suppression:revoked",
                    actor=f"person:{person}",
                    detail=f"suppression={found.id}",
                )
            )
            session.commit()
        return found
