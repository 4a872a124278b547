"""Gate rows (the source of truth for a gate's state), submissions and the audit trail."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from sqlalchemy import Index, UniqueConstraint, event, text, update
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError
from sqlmodel import Field, Session, SQLModel, col, create_engine, select

from worker.core.models import TERMINAL_STATUSES

OPEN_STATUSES = ("pending", "running")


def utcnow() -> datetime:
    return datetime.now(UTC)


def new_id() -> str:
    return uuid.uuid4().hex


class Gate(SQLModel, table=True):
    """One artifact under one policy."""

    __tablename__ = "gates"
    __table_args__ = (
        UniqueConstraint("sha256", "policy_id", "policy_sha256", name="uq_gate_artifact_policy"),
        Index("ix_gates_status_updated", "status", "updated_at"),
    )

    id: str = Field(default_factory=new_id, primary_key=True, max_length=32)
    sha256: str = Field(index=True, max_length=64)
    object_key: str
    size: int
    policy_ref: str
    policy_id: str
    policy_version: str
    policy_sha256: str = Field(max_length=64)
    status: str = Field(default="pending", max_length=16)
    decision: str | None = None
    reason: str | None = None
    report: str | None = None
    attempts: int = 0
    source: str = ""
    deadline: datetime
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow)
    decided_at: datetime | None = None

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL_STATUSES


class Submission(SQLModel, table=True):
    """One artifact submitted under a set of policies: allowed only if every gate allows."""

    __tablename__ = "submissions"

    id: str = Field(default_factory=new_id, primary_key=True, max_length=32)
    sha256: str = Field(index=True, max_length=64)
    gate_ids: str
    status: str = Field(default="pending", max_length=16)
    published: bool = False
    created_at: datetime = Field(default_factory=utcnow)

    @property
    def gates(self) -> list[str]:
        ids: list[str] = json.loads(self.gate_ids)
        return ids


class AuditEvent(SQLModel, table=True):
    """An append-only record of every transition: what, when, by whom."""

    __tablename__ = "audit_events"

    id: int | None = Field(default=None, primary_key=True)
    gate_id: str = Field(index=True, max_length=32)
    at: datetime = Field(default_factory=utcnow)
    event: str = Field(max_length=32)
    actor: str = Field(max_length=128)
    detail: str = ""


def make_engine(url: str) -> Engine:
    if url.startswith("sqlite"):
        engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 30})

        @event.listens_for(engine, "connect")
        def _pragmas(dbapi_conn, _record):  # type: ignore[no-untyped-def]
            cur = dbapi_conn.cursor()
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA synchronous=NORMAL")
            cur.close()

    else:
        # No pre-ping round trip per checkout: a connection broken by a database restart
        # fails its statement, the task retries (see worker.tasks) and the pool reconnects.
        engine = create_engine(url, pool_size=5, max_overflow=5, pool_recycle=1800)
    SQLModel.metadata.create_all(engine)
    return engine


@dataclass(frozen=True)
class Resolution:
    """What finishing a gate means for the submissions it belongs to."""

    won: bool
    publish: list[Submission]


class GateRepo:
    """All reads and writes of gate state. Transitions are conditional updates."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._locks = engine.dialect.name != "sqlite"

    def audit(self, session: Session, gate_id: str, what: str, actor: str, detail: str = "") -> None:
        session.add(AuditEvent(gate_id=gate_id, event=what, actor=actor, detail=detail[:500]))

    def create_or_get(self, gate: Gate, actor: str) -> tuple[Gate, bool]:
        """Insert ``gate`` or return the existing gate for the same bytes and policy."""
        with Session(self.engine, expire_on_commit=False) as session:
            session.add(gate)
            self.audit(session, gate.id, "submitted", actor, f"policy={gate.policy_id}@{gate.policy_version}")
            try:
                session.commit()
                return gate, True
            except IntegrityError:
                session.rollback()
        with Session(self.engine, expire_on_commit=False) as session:
            existing = session.exec(
                select(Gate).where(
                    Gate.sha256 == gate.sha256,
                    Gate.policy_id == gate.policy_id,
                    Gate.policy_sha256 == gate.policy_sha256,
                )
            ).one()
            return existing, False

    def create_submission(self, sha256: str, gate_ids: Sequence[str]) -> Submission:
        sub = Submission(sha256=sha256, gate_ids=json.dumps(list(gate_ids)))
        with Session(self.engine, expire_on_commit=False) as session:
            session.add(sub)
            session.commit()
        return sub

    def get(self, gate_id: str) -> Gate | None:
        with Session(self.engine, expire_on_commit=False) as session:
            return session.get(Gate, gate_id)

    def get_many(self, gate_ids: Iterable[str]) -> dict[str, Gate]:
        ids = list(gate_ids)
        with Session(self.engine, expire_on_commit=False) as session:
            rows = session.exec(select(Gate).where(col(Gate.id).in_(ids))).all()
        return {g.id: g for g in rows}

    def start(self, gate_id: str, actor: str) -> Gate | None:
        """Mark a gate running and count the attempt; ``None`` if it is already decided.

        One conditional ``UPDATE … RETURNING``: atomic without a separate row lock.
        """
        stmt = (
            update(Gate)
            .where(col(Gate.id) == gate_id, col(Gate.status).in_(OPEN_STATUSES))
            .values(status="running", attempts=col(Gate.attempts) + 1, updated_at=utcnow())
            .returning(*Gate.__table__.c)  # type: ignore[attr-defined]
        )
        with Session(self.engine) as session:
            row = session.execute(stmt).mappings().first()
            if row is None:
                session.rollback()
                return None
            gate = Gate(**row)
            self.audit(session, gate_id, "running", actor, f"attempt={gate.attempts}")
            session.commit()
            return gate

    def finish(self, gate_id: str, decision: str, reason: str, report: str, actor: str) -> Resolution:
        """Record the decision once; later calls (redeliveries) change nothing."""
        now = utcnow()
        stmt = (
            update(Gate)
            .where(col(Gate.id) == gate_id, col(Gate.status).in_(OPEN_STATUSES))
            .values(
                status=decision,
                decision=decision,
                reason=reason[:500],
                report=report,
                updated_at=now,
                decided_at=now,
            )
            .returning(col(Gate.sha256))
        )
        with Session(self.engine, expire_on_commit=False) as session:
            sha256 = session.execute(stmt).scalar_one_or_none()
            if sha256 is None:
                session.rollback()
                return Resolution(won=False, publish=[])
            self.audit(session, gate_id, decision, actor, reason)
            publish = self._resolve_submissions(session, sha256)
            session.commit()
            return Resolution(won=True, publish=publish)

    def _locked(self, session: Session, gate_id: str) -> Gate | None:
        stmt = select(Gate).where(Gate.id == gate_id)
        if self._locks:
            stmt = stmt.with_for_update()
        return session.exec(stmt).first()

    def _resolve_submissions(self, session: Session, sha256: str) -> list[Submission]:
        stmt = select(Submission).where(Submission.sha256 == sha256, Submission.status == "pending")
        if self._locks:
            stmt = stmt.with_for_update()
        ready: list[Submission] = []
        for sub in session.exec(stmt).all():
            statuses = [g.status for g in session.exec(select(Gate).where(col(Gate.id).in_(sub.gates)))]
            if len(statuses) < len(sub.gates) or any(s not in TERMINAL_STATUSES for s in statuses):
                continue
            sub.status = "allow" if all(s == "allow" for s in statuses) else "blocked"
            session.add(sub)
            if sub.status == "allow":
                ready.append(sub)
        return ready

    def resolve_now(self, sha256: str) -> list[Submission]:
        """Resolve submissions whose gates were all decided already (deduplicated intake)."""
        with Session(self.engine, expire_on_commit=False) as session:
            ready = self._resolve_submissions(session, sha256)
            session.commit()
            return ready

    def mark_published(self, submission_id: str, gate_ids: Sequence[str], actor: str, detail: str) -> None:
        """Record that the allowed message went out, on the submission and in each gate's audit."""
        with Session(self.engine) as session:
            sub = session.get(Submission, submission_id)
            if sub is not None:
                sub.published = True
                session.add(sub)
            for gate_id in gate_ids:
                self.audit(session, gate_id, "published", actor, detail)
            session.commit()

    def unpublished(self) -> list[Submission]:
        with Session(self.engine, expire_on_commit=False) as session:
            stmt = select(Submission).where(Submission.status == "allow", Submission.published == False)  # noqa: E712
            return list(session.exec(stmt).all())

    def touch_requeued(self, gate_id: str, actor: str, detail: str) -> None:
        with Session(self.engine) as session:
            gate = self._locked(session, gate_id)
            if gate is None or gate.terminal:
                return
            gate.updated_at = utcnow()
            session.add(gate)
            self.audit(session, gate_id, "requeued", actor, detail)
            session.commit()

    def open_gates(self, older_than: datetime) -> list[Gate]:
        with Session(self.engine, expire_on_commit=False) as session:
            stmt = select(Gate).where(
                col(Gate.status).in_(["pending", "running"]), col(Gate.updated_at) < older_than
            )
            return list(session.exec(stmt).all())

    def overdue(self, now: datetime) -> list[Gate]:
        with Session(self.engine, expire_on_commit=False) as session:
            stmt = select(Gate).where(col(Gate.status).in_(["pending", "running"]), col(Gate.deadline) < now)
            return list(session.exec(stmt).all())

    def audit_trail(self, gate_id: str) -> list[AuditEvent]:
        with Session(self.engine, expire_on_commit=False) as session:
            stmt = select(AuditEvent).where(AuditEvent.gate_id == gate_id).order_by(col(AuditEvent.id))
            return list(session.exec(stmt).all())

    def counts(self) -> dict[str, int]:
        with Session(self.engine) as session:
            rows = session.exec(text("SELECT status, count(*) FROM gates GROUP BY status")).all()  # type: ignore[call-overload]
        return {str(s): int(n) for s, n in rows}


def deadline_from_now(seconds: float) -> datetime:
    return utcnow() + timedelta(seconds=seconds)
