"""The ``fetches`` table: registry releases submitted by reference, fetched by a worker.

A row is written before its ``canary.fetch`` message is sent, so a lost message or a dead
worker leaves a visible ``pending`` row that the sweeper sends again (``worker.pipeline.fetch``).
A fetch ends ``fetched`` (its diff stored, its gates registered) or ``intake_failed`` with a
one-line reason (404, digest mismatch, unreadable archive, retries spent), also written to the
audit trail under the fetch's id.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from datetime import datetime

from sqlalchemy import Index, update
from sqlalchemy.engine import Engine
from sqlmodel import Field, Session, SQLModel, col, select

from worker.adapters.db.engine import translated
from worker.adapters.db.tables import AuditEvent, new_id, utcnow

PENDING, FETCHED, INTAKE_FAILED = "pending", "fetched", "intake_failed"


class Fetch(SQLModel, table=True):
    """One release reference: what to fetch, under which policies, and what came of it."""

    __tablename__ = "fetches"
    __table_args__ = (Index("ix_fetches_status_updated", "status", "updated_at"),)

    id: str = Field(default_factory=new_id, primary_key=True, max_length=32)
    spec: str  # as submitted, e.g. "pypi:requests==2.32.3"
    ecosystem: str = Field(max_length=16)
    name: str
    version: str | None = None  # None: the newest final release, resolved on fetch
    previous: str | None = None  # None: the version just before it, resolved on fetch
    policies: str  # JSON list of policy refs
    status: str = Field(default=PENDING, max_length=16)
    attempts: int = 0
    reason: str | None = None
    label: str = ""  # "pypi:requests:2.32.2->2.32.3" once fetched
    sha256: str | None = Field(default=None, max_length=64)
    gate_ids: str = "[]"
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow)

    @property
    def policy_refs(self) -> list[str]:
        refs: list[str] = json.loads(self.policies)
        return refs

    @property
    def gates(self) -> list[str]:
        ids: list[str] = json.loads(self.gate_ids)
        return ids


class FetchRepo:
    """Reads and conditional transitions of fetch rows (errors translated, as the gate repository's)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine  # the table is created with the others (``make_engine``)

    @translated
    def record(self, fetches: Sequence[Fetch], actor: str) -> list[Fetch]:
        """Insert the rows in one transaction, each with a ``fetch_recorded`` audit event."""
        with Session(self.engine, expire_on_commit=False) as session:
            session.add_all(fetches)
            session.add_all(AuditEvent(gate_id=f.id, event="fetch_recorded", actor=actor) for f in fetches)
            session.commit()
        return list(fetches)

    @translated
    def get_many(self, ids: Iterable[str]) -> dict[str, Fetch]:
        wanted = list(dict.fromkeys(ids))
        with Session(self.engine, expire_on_commit=False) as session:
            rows = session.exec(select(Fetch).where(col(Fetch.id).in_(wanted))).all() if wanted else []
        return {row.id: row for row in rows}

    @translated
    def start(self, fetch_id: str) -> Fetch | None:
        """Count an attempt on a pending fetch and return it; None when it is over (or unknown)."""
        with Session(self.engine, expire_on_commit=False) as session:
            done = session.execute(
                update(Fetch)
                .where(col(Fetch.id) == fetch_id, col(Fetch.status) == PENDING)
                .values(attempts=col(Fetch.attempts) + 1, updated_at=utcnow())
            )
            session.commit()
            if not done.rowcount:  # type: ignore[attr-defined]
                return None
            return session.get(Fetch, fetch_id)

    @translated
    def finish(
        self, fetch_id: str, label: str, sha256: str, gate_ids: Sequence[str], actor: str, note: str = ""
    ) -> bool:
        """Mark a pending fetch ``fetched`` with the diff's sha256 and its gates (``note``, such as
        "already gated", is kept as its reason and in the audit trail)."""
        detail = f"{label} sha256={sha256} gates={','.join(gate_ids)}" + (f" ({note})" if note else "")
        values = {"label": label[:255], "sha256": sha256, "gate_ids": json.dumps(list(gate_ids))}
        if note:
            values["reason"] = note
        return self._end(fetch_id, FETCHED, "fetched", detail, actor, **values)

    @translated
    def fail(self, fetch_id: str, reason: str, actor: str) -> bool:
        """Mark a pending fetch ``intake_failed`` with a one-line reason (also in the audit trail)."""
        line = " ".join(reason.split())[:500]
        return self._end(fetch_id, INTAKE_FAILED, INTAKE_FAILED, line, actor, reason=line)

    def _end(self, fetch_id: str, status: str, event: str, detail: str, actor: str, **values: str) -> bool:
        with Session(self.engine) as session:
            done = session.execute(
                update(Fetch)
                .where(col(Fetch.id) == fetch_id, col(Fetch.status) == PENDING)
                .values(status=status, updated_at=utcnow(), **values)
            )
            if done.rowcount:  # type: ignore[attr-defined]
                session.add(AuditEvent(gate_id=fetch_id, event=event, actor=actor, detail=detail[:500]))
            session.commit()
            return bool(done.rowcount)  # type: ignore[attr-defined]

    @translated
    def stale(self, older_than: datetime) -> list[Fetch]:
        """Pending fetches untouched since ``older_than``, oldest first."""
        with Session(self.engine, expire_on_commit=False) as session:
            query = (
                select(Fetch)
                .where(col(Fetch.status) == PENDING, col(Fetch.updated_at) < older_than)
                .order_by(col(Fetch.updated_at))
            )
            return list(session.exec(query).all())

    @translated
    def touch_requeued(self, fetch_id: str, actor: str, detail: str) -> None:
        """A pending fetch sent again: its clock restarts, audited as ``requeued``."""
        with Session(self.engine) as session:
            session.execute(
                update(Fetch)
                .where(col(Fetch.id) == fetch_id, col(Fetch.status) == PENDING)
                .values(updated_at=utcnow())
            )
            session.add(AuditEvent(gate_id=fetch_id, event="requeued", actor=actor, detail=detail[:500]))
            session.commit()
