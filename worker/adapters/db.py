"""Gate rows (the source of truth for a gate's state), submissions and the audit trail."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from sqlalchemy import (
    ColumnElement,
    Index,
    String,
    UniqueConstraint,
    column,
    event,
    exists,
    insert,
    or_,
    text,
    update,
    values,
)
from sqlalchemy import select as core_select
from sqlalchemy.engine import Connection, Engine
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
    # The id of the message whose attempt holds the gate (``start_many``); cleared by the sweeper
    # when it re-sends a gate whose message is known lost.
    claim: str | None = Field(default=None, max_length=64)
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


REVIEWED = "reviewed:"  # audit event prefix of a person's decision (worker.pipeline.review)


def not_reviewed() -> ColumnElement[bool]:
    """True for a gate no person has decided yet (no ``reviewed:*`` audit event).

    A correlated ``NOT EXISTS``: one lookup in the audit table's ``gate_id`` index per gate,
    not a scan of the whole (append-only, ever-growing) audit table.
    """
    return ~exists().where(
        col(AuditEvent.gate_id) == col(Gate.id), col(AuditEvent.event).startswith(REVIEWED)
    )


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
        # fails its statement, the task retries (see worker.tasks.gate) and the pool reconnects.
        engine = create_engine(url, pool_size=5, max_overflow=5, pool_recycle=1800)
    SQLModel.metadata.create_all(engine)
    _add_missing_columns(engine)
    return engine


# Columns added after the first release: ``create_all`` creates missing tables, not columns.
_ADDED_COLUMNS = {"gates": {"claim": "VARCHAR(64)"}}


def _add_missing_columns(engine: Engine) -> None:
    from sqlalchemy import inspect

    inspector = inspect(engine)
    for table, columns in _ADDED_COLUMNS.items():
        have = {c["name"] for c in inspector.get_columns(table)}
        missing = [(name, kind) for name, kind in columns.items() if name not in have]
        if not missing:
            continue
        with engine.begin() as conn:
            for name, kind in missing:
                conn.execute(text(f"ALTER TABLE {table} ADD COLUMN {name} {kind}"))


@dataclass(frozen=True)
class Outcome:
    """A gate's decision, ready to be recorded."""

    gate_id: str
    decision: str
    reason: str
    report: str


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
        self._async_engine: Engine | None = None

    @property
    def autocommit_engine(self) -> Engine:
        """Postgres: a small pool of autocommit sessions with ``synchronous_commit=off``, for plain
        reads and for single-statement transitions that are recoverable: one round trip each (no
        BEGIN/ROLLBACK around a read), no wait for the WAL flush. Created on first use.

        Recoverable means a transition whose loss in a database crash is recovered by design,
        its audit rows in the same statement (so lost together, never apart): a gate marked
        ``running`` (it reverts to open, and the sweeper re-enqueues open gates) and a submission
        marked published (the sweeper republishes it; consumers de-duplicate by message id).
        WAL is flushed in order, so the next synchronous commit (a decision, an intake) makes
        every earlier one durable too: no later state survives without them. Never for a write
        that must be durable before something external happens (intake, decisions)."""
        if self._async_engine is None:
            self._async_engine = create_engine(
                self.engine.url,
                pool_size=2,
                max_overflow=3,
                pool_recycle=1800,
                isolation_level="AUTOCOMMIT",
                connect_args={"options": "-c synchronous_commit=off"},
            )
        return self._async_engine

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

    def register(self, gates: Sequence[Gate], actor: str) -> tuple[list[Gate], list[bool], Submission]:
        """Intake in one transaction: each gate inserted (or the existing one for the same bytes and
        policy returned), the audit rows, and the submission that groups them.

        ``INSERT … ON CONFLICT DO NOTHING`` keeps concurrent producers of the same bytes apart
        without a failed statement; the loser reads the winner's row in the same transaction.
        """
        table = Gate.__table__  # type: ignore[attr-defined]
        insert_gate = _upsert_insert(self.engine.dialect.name)
        out: list[Gate] = []
        created: list[bool] = []
        with self.engine.begin() as conn:
            for gate in gates:
                values = {c.name: getattr(gate, c.name) for c in table.c}
                stmt = insert_gate(table).values(values).on_conflict_do_nothing().returning(table.c.id)
                if conn.execute(stmt).scalar_one_or_none() is not None:
                    out.append(gate)
                    created.append(True)
                    continue
                row = (
                    conn.execute(
                        core_select(table).where(
                            table.c.sha256 == gate.sha256,
                            table.c.policy_id == gate.policy_id,
                            table.c.policy_sha256 == gate.policy_sha256,
                        )
                    )
                    .mappings()
                    .one()
                )
                out.append(Gate(**row))
                created.append(False)
            events = [
                (g.id, "submitted", f"policy={g.policy_id}@{g.policy_version}")
                for g, new in zip(out, created, strict=True)
                if new
            ]
            self._audit_many(conn, events, actor)
            sub = Submission(sha256=gates[0].sha256, gate_ids=json.dumps([g.id for g in out]))
            conn.execute(
                insert(Submission.__table__).values(  # type: ignore[attr-defined]
                    {c.name: getattr(sub, c.name) for c in Submission.__table__.c}  # type: ignore[attr-defined]
                )
            )
        return out, created, sub

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
        if not ids:
            return {}
        table = Gate.__table__  # type: ignore[attr-defined]
        engine = self.autocommit_engine if self._locks else self.engine  # a read: one round trip
        with engine.connect() as conn:
            rows = conn.execute(core_select(table).where(table.c.id.in_(ids))).mappings().all()
        return {row["id"]: Gate(**row) for row in rows}

    def start(self, gate_id: str, actor: str) -> Gate | None:
        """Mark a gate running and count the attempt; ``None`` if it is already decided."""
        started = self.start_many([gate_id], actor)
        return started[0] if started else None

    def start_many(self, gate_ids: Sequence[str], actor: str, claim: str | None = None) -> list[Gate]:
        """Mark the open gates among ``gate_ids`` running and count their attempt, in one transaction.

        One conditional ``UPDATE … RETURNING`` for the whole batch: each row changes only if it
        is still open, so a decided gate (a redelivered message) is left out of the result.

        ``claim`` (the id of the message starting them) makes an attempt count only when the
        previous one is known dead: a gate is taken if it is unclaimed (new, or released by the
        sweeper) or claimed by this same message (delivered again: its previous delivery died
        or gave up). A gate claimed by another message is left out: that attempt is alive.
        """
        ids = sorted(set(gate_ids))
        if not ids:
            return []
        if self._locks:
            return self._start_many_pg(ids, actor, claim)
        table = Gate.__table__  # type: ignore[attr-defined]
        where = [table.c.id.in_(ids), table.c.status.in_(OPEN_STATUSES)]
        if claim is not None:
            where.append(or_(table.c.claim.is_(None), table.c.claim == claim))
        stmt = (
            update(table)
            .where(*where)
            .values(
                status="running",
                attempts=table.c.attempts + 1,
                claim=table.c.claim if claim is None else claim,
                updated_at=utcnow(),
            )
            .returning(*table.c)
        )
        with self.engine.begin() as conn:
            gates = [Gate(**row) for row in conn.execute(stmt).mappings()]
            self._audit_many(conn, [(g.id, "running", f"attempt={g.attempts}") for g in gates], actor)
        return gates

    def _start_many_pg(self, ids: list[str], actor: str, claim: str | None) -> list[Gate]:
        """``start_many`` on Postgres in one statement (the update and its audit rows, atomic as
        one statement is), one round trip, committed without waiting for the WAL flush."""
        stmt = text(
            """
            WITH started AS (
                UPDATE gates SET status = 'running', attempts = attempts + 1, updated_at = :now,
                    claim = COALESCE(CAST(:claim AS varchar), claim)
                WHERE id = ANY(:ids) AND status IN ('pending', 'running')
                    AND (CAST(:claim AS varchar) IS NULL OR claim IS NULL OR claim = :claim)
                RETURNING *
            ), audited AS (
                INSERT INTO audit_events (gate_id, at, event, actor, detail)
                SELECT id, :now, 'running', :actor, 'attempt=' || attempts FROM started
            )
            SELECT * FROM started
            """
        ).columns(*Gate.__table__.c)  # type: ignore[attr-defined]  # typed results, as the Core paths
        with self.autocommit_engine.connect() as conn:
            params = {"now": utcnow(), "ids": ids, "actor": actor, "claim": claim}
            rows = conn.execute(stmt, params).mappings().all()
        return [Gate(**row) for row in rows]

    def finish(self, gate_id: str, decision: str, reason: str, report: str, actor: str) -> Resolution:
        """Record the decision once; later calls (redeliveries) change nothing."""
        won, publish = self.finish_many([Outcome(gate_id, decision, reason, report)], actor)
        return Resolution(won=bool(won), publish=publish)

    def finish_many(self, outcomes: Sequence[Outcome], actor: str) -> tuple[set[str], list[Submission]]:
        """Record each gate's decision once, in one transaction; returns (gates won, submissions to publish).

        Each gate's update is conditional on the gate still being open, so a redelivered
        decide changes nothing for a gate decided meanwhile; the others of the batch still land.
        """
        table = Gate.__table__  # type: ignore[attr-defined]
        now = utcnow()
        won: dict[str, str] = {}
        ordered = sorted(outcomes, key=lambda o: o.gate_id)
        batched = self._locks and len(ordered) > 1
        with self.engine.begin() as conn:
            if batched:
                won = self._finish_batch(conn, ordered, now)
            for out in () if batched else ordered:  # SQLite, or a lone gate: one statement each
                stmt = (
                    update(table)
                    .where(table.c.id == out.gate_id, table.c.status.in_(OPEN_STATUSES))
                    .values(
                        status=out.decision,
                        decision=out.decision,
                        reason=out.reason[:500],
                        report=out.report,
                        updated_at=now,
                        decided_at=now,
                    )
                    .returning(table.c.sha256)
                )
                sha256 = conn.execute(stmt).scalar_one_or_none()
                if sha256 is not None:
                    won[out.gate_id] = sha256
            by_id = {o.gate_id: o for o in outcomes}
            self._audit_many(conn, [(gid, by_id[gid].decision, by_id[gid].reason) for gid in won], actor)
            publish = self._resolve_submissions(conn, set(won.values())) if won else []
        return set(won), publish

    def _finish_batch(self, conn: Connection, ordered: Sequence[Outcome], now: datetime) -> dict[str, str]:
        """Postgres, several gates: lock the open ones in id order (one lock order: no deadlocks
        with a concurrent redelivery), then one ``UPDATE … FROM (VALUES …)`` for all of them:
        two statements per batch instead of one per gate. Returns {gate id won: sha256}."""
        table = Gate.__table__  # type: ignore[attr-defined]
        ids = [o.gate_id for o in ordered]
        lock = (
            core_select(table.c.id)
            .where(table.c.id.in_(ids), table.c.status.in_(OPEN_STATUSES))
            .order_by(table.c.id)
            .with_for_update()
        )
        open_ids = set(conn.execute(lock).scalars())
        rows = [(o.gate_id, o.decision, o.reason[:500], o.report) for o in ordered if o.gate_id in open_ids]
        if not rows:
            return {}
        given = values(
            column("gid", String),
            column("decision", String),
            column("reason", String),
            column("report", String),
            name="given",
        ).data(rows)
        stmt = (
            update(table)
            .where(table.c.id == given.c.gid, table.c.status.in_(OPEN_STATUSES))
            .values(
                status=given.c.decision,
                decision=given.c.decision,
                reason=given.c.reason,
                report=given.c.report,
                updated_at=now,
                decided_at=now,
            )
            .returning(table.c.id, table.c.sha256)
        )
        return {gid: sha for gid, sha in conn.execute(stmt).all()}

    def _audit_many(self, conn: Connection, events: Sequence[tuple[str, str, str]], actor: str) -> None:
        if not events:
            return
        now = utcnow()
        rows = [
            {"gate_id": gid, "at": now, "event": what, "actor": actor, "detail": detail[:500]}
            for gid, what, detail in events
        ]
        conn.execute(insert(AuditEvent.__table__), rows)  # type: ignore[attr-defined]

    def _locked(self, session: Session, gate_id: str) -> Gate | None:
        stmt = select(Gate).where(Gate.id == gate_id)
        if self._locks:
            stmt = stmt.with_for_update()
        return session.exec(stmt).first()

    def _resolve_submissions(self, conn: Connection, sha256s: Iterable[str]) -> list[Submission]:
        """Close the pending submissions of these artifacts whose gates are all decided."""
        subs_t = Submission.__table__  # type: ignore[attr-defined]
        gates_t = Gate.__table__  # type: ignore[attr-defined]
        stmt = (
            core_select(subs_t)
            .where(subs_t.c.sha256.in_(sorted(set(sha256s))), subs_t.c.status == "pending")
            .order_by(subs_t.c.id)
        )
        if self._locks:
            stmt = stmt.with_for_update()
        subs = [Submission(**row) for row in conn.execute(stmt).mappings()]
        if not subs:
            return []
        wanted = {gid for sub in subs for gid in sub.gates}
        statuses: dict[str, str] = dict(
            conn.execute(core_select(gates_t.c.id, gates_t.c.status).where(gates_t.c.id.in_(wanted))).all()
        )
        ready: list[Submission] = []
        closed: dict[str, list[str]] = {}
        for sub in subs:
            got = [statuses.get(gid) for gid in sub.gates]
            if any(s not in TERMINAL_STATUSES for s in got):
                continue
            sub.status = "allow" if all(s == "allow" for s in got) else "blocked"
            closed.setdefault(sub.status, []).append(sub.id)
            if sub.status == "allow":
                ready.append(sub)
        for status, ids in closed.items():  # one statement per outcome, not per submission
            conn.execute(update(subs_t).where(subs_t.c.id.in_(ids)).values(status=status))
        return ready

    def resolve_now(self, sha256: str) -> list[Submission]:
        """Resolve submissions whose gates were all decided already (deduplicated intake)."""
        with self.engine.begin() as conn:
            return self._resolve_submissions(conn, [sha256])

    def mark_published(self, submission_id: str, gate_ids: Sequence[str], actor: str, detail: str) -> None:
        """Record that the allowed message went out, on the submission and in each gate's audit."""
        self.mark_published_many([(submission_id, gate_ids)], actor, detail)

    def mark_published_many(
        self, published: Sequence[tuple[str, Sequence[str]]], actor: str, detail: str
    ) -> None:
        """``mark_published`` for several submissions in one transaction."""
        if not published:
            return
        if self._locks:  # Postgres: one recoverable statement, one round trip
            stmt = text(
                """
                WITH marked AS (UPDATE submissions SET published = true WHERE id = ANY(:sids))
                INSERT INTO audit_events (gate_id, at, event, actor, detail)
                SELECT gid, :now, 'published', :actor, :detail FROM unnest(CAST(:gids AS text[])) AS gid
                """
            )
            params = {
                "sids": [sid for sid, _ in published],
                "gids": [gid for _, ids in published for gid in ids],
                "now": utcnow(),
                "actor": actor,
                "detail": detail[:500],
            }
            with self.autocommit_engine.connect() as conn:
                conn.execute(stmt, params)
            return
        subs_t = Submission.__table__  # type: ignore[attr-defined]
        with self.engine.begin() as conn:
            conn.execute(
                update(subs_t).where(subs_t.c.id.in_([sid for sid, _ in published])).values(published=True)
            )
            self._audit_many(conn, [(gid, "published", detail) for _, ids in published for gid in ids], actor)

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
            gate.claim = None  # its message is known lost: the next start is a new attempt
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


def _upsert_insert(dialect: str):  # type: ignore[no-untyped-def]
    """The dialect's ``insert`` (it has ``on_conflict_do_nothing``)."""
    if dialect == "postgresql":
        from sqlalchemy.dialects.postgresql import insert as pg_insert

        return pg_insert
    from sqlalchemy.dialects.sqlite import insert as sqlite_insert

    return sqlite_insert


def deadline_from_now(seconds: float) -> datetime:
    return utcnow() + timedelta(seconds=seconds)
