"""The gate repository: every read and write of gate state, and the only home of its SQL.

Portable (SQLite for the embedded default, Postgres in production); where Postgres can do in
one statement what the portable path does in several, the repository takes the fast path in
``worker.adapters.db.postgres``. Every public method translates the driver's errors
(``worker.adapters.db.engine``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any, cast

from sqlalchemy import insert, or_, text, update
from sqlalchemy import select as core_select
from sqlalchemy.engine import Connection, CursorResult, Engine
from sqlmodel import Session, SQLModel, col, select

from worker.adapters.db import postgres
from worker.adapters.db.engine import translated
from worker.adapters.db.gauges import GateGauges
from worker.adapters.db.reads import GateReads
from worker.adapters.db.tables import (
    OPEN_STATUSES,
    REVIEWED,
    TERMINAL_STATUSES,
    AuditEvent,
    Gate,
    GateStatus,
    Outcome,
    Review,
    Submission,
    gate_from_row,
    new_submission,
    not_reviewed,
    utcnow,
)


class GateRepo(GateGauges, GateReads):
    """All reads and writes of gate state. Transitions are conditional updates."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._locks = engine.dialect.name != "sqlite"
        self._async_engine: Engine | None = None

    @property
    def autocommit_engine(self) -> Engine:
        """Postgres: see ``postgres.autocommit_engine``. Created on first use."""
        if self._async_engine is None:
            self._async_engine = postgres.autocommit_engine(self.engine)
        return self._async_engine

    def _audit(self, session: Session, gate_id: str, what: str, actor: str, detail: str = "") -> None:
        session.add(AuditEvent(gate_id=gate_id, event=what, actor=actor, detail=detail[:500]))

    @translated
    def register(
        self, gates: Sequence[Gate], actor: str, durable: bool = True
    ) -> tuple[list[Gate], list[bool], Submission]:
        """Intake in one transaction: each gate inserted (or the existing one for the same bytes and
        policy returned), the audit rows, and the submission that groups them.

        ``durable=False``: on Postgres, new gates are committed without waiting for the WAL
        flush (visible at once); the caller sends its messages, then calls ``confirm_durable``
        before it tells anyone the gates exist. Elsewhere it changes nothing.

        ``INSERT … ON CONFLICT DO NOTHING`` keeps concurrent producers of the same bytes apart
        without a failed statement; the loser reads the winner's row in the same transaction.
        On Postgres, gates that are all new take one statement, one round trip
        (``postgres.register_new``); this transaction completes what that did not write.
        """
        table = Gate.__table__  # type: ignore[attr-defined]
        insert_gate = postgres.upsert_insert(self.engine.dialect.name)
        out: list[Gate] = []
        created: list[bool] = []
        sub = new_submission(gates[0].sha256, [g.id for g in gates])
        ours: set[str] = set()  # inserted (and audited) by the one-statement path already
        if self._locks and gates:
            engine = self.engine if durable else self.autocommit_engine
            ours = postgres.register_new(engine, gates, sub, actor, utcnow())
            if len(ours) == len(gates):
                return list(gates), [True] * len(gates), sub
        with self.engine.begin() as conn:
            for gate in gates:
                if gate.id in ours:
                    out.append(gate)
                    created.append(True)
                    continue
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
                out.append(gate_from_row(row))
                created.append(False)
            events = [
                (g.id, "submitted", f"policy={g.policy_id}@{g.policy_version}")
                for g, new in zip(out, created, strict=True)
                if new and g.id not in ours
            ]
            self._audit_many(conn, events, actor)
            sub = new_submission(gates[0].sha256, [g.id for g in out])
            conn.execute(
                insert(Submission.__table__).values(  # type: ignore[attr-defined]
                    {c.name: getattr(sub, c.name) for c in Submission.__table__.c}  # type: ignore[attr-defined]
                )
            )
        return out, created, sub

    @translated
    def confirm_durable(self, submission_id: str) -> None:
        """Return once ``register(..., durable=False)``'s rows are flushed (Postgres; elsewhere
        every commit already is)."""
        if self._locks:
            postgres.confirm_durable(self.engine, submission_id)

    @translated
    def get(self, gate_id: str) -> Gate | None:
        with Session(self.engine, expire_on_commit=False) as session:
            return session.get(Gate, gate_id)

    @translated
    def get_many(self, gate_ids: Iterable[str]) -> dict[str, Gate]:
        ids = list(gate_ids)
        if not ids:
            return {}
        table = Gate.__table__  # type: ignore[attr-defined]
        engine = self.autocommit_engine if self._locks else self.engine  # a read: one round trip
        with engine.connect() as conn:
            rows = conn.execute(core_select(table).where(table.c.id.in_(ids))).mappings().all()
        return {row["id"]: gate_from_row(row) for row in rows}

    @translated
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
            return postgres.start_many(self.autocommit_engine, ids, actor, utcnow(), claim)
        table = Gate.__table__  # type: ignore[attr-defined]
        where = [table.c.id.in_(ids), table.c.status.in_(OPEN_STATUSES)]
        if claim is not None:
            where.append(or_(table.c.claim.is_(None), table.c.claim == claim))
        stmt = (
            update(table)
            .where(*where)
            .values(
                status=GateStatus.running,
                attempts=table.c.attempts + 1,
                claim=table.c.claim if claim is None else claim,
                updated_at=utcnow(),
            )
            .returning(*table.c)
        )
        with self.engine.begin() as conn:
            gates = [gate_from_row(row) for row in conn.execute(stmt).mappings()]
            self._audit_many(conn, [(g.id, "running", f"attempt={g.attempts}") for g in gates], actor)
        return gates

    @translated
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
                rows = [(o.gate_id, o.decision, o.reason[:500], o.report) for o in ordered]
                won = postgres.finish_batch(conn, rows, now)
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

    @translated
    def add_audit(self, events: Sequence[tuple[str, str, str]], actor: str) -> None:
        """Append audit rows ``(gate id, event, detail)`` in one transaction."""
        with self.engine.begin() as conn:
            self._audit_many(conn, events, actor)

    @translated
    def ping(self) -> None:
        """One round trip to the database (a readiness probe)."""
        with self.engine.connect() as conn:
            conn.execute(text("select 1"))

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

    def _resolve_submissions(
        self, conn: Connection, sha256s: Iterable[str], reopen: bool = False
    ) -> list[Submission]:
        """Settle the submissions of these artifacts whose gates are all decided: ``allow`` when
        every gate allows, else ``blocked``. Returns those now allowed (to publish).

        The one home of submission resolution. By default it looks at the pending submissions
        (a gate was just decided); ``reopen`` looks at every unpublished one instead (a person
        released a gate, which can turn a blocked submission into an allowed one).
        """
        subs_t = Submission.__table__  # type: ignore[attr-defined]
        gates_t = Gate.__table__  # type: ignore[attr-defined]
        which = subs_t.c.published.is_(False) if reopen else subs_t.c.status == "pending"
        stmt = (
            core_select(subs_t).where(subs_t.c.sha256.in_(sorted(set(sha256s))), which).order_by(subs_t.c.id)
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
            status = "allow" if all(s == GateStatus.allow for s in got) else "blocked"
            if status != sub.status:
                closed.setdefault(status, []).append(sub.id)
            sub.status = status
            if status == "allow":
                ready.append(sub)
        for status, ids in closed.items():  # one statement per outcome, not per submission
            conn.execute(update(subs_t).where(subs_t.c.id.in_(ids)).values(status=status))
        return ready

    @translated
    def resolve_now(self, sha256: str) -> list[Submission]:
        """Resolve submissions whose gates were all decided already (deduplicated intake)."""
        with self.engine.begin() as conn:
            return self._resolve_submissions(conn, [sha256])

    @translated
    def mark_published_many(
        self, published: Sequence[tuple[str, Sequence[str]]], actor: str, detail: str
    ) -> None:
        """Record that each allowed message went out, on the submission and in each gate's audit,
        for several submissions in one transaction."""
        if not published:
            return
        if self._locks:  # Postgres: one recoverable statement, one round trip
            postgres.mark_published_many(self.autocommit_engine, published, actor, detail, utcnow())
            return
        subs_t = Submission.__table__  # type: ignore[attr-defined]
        with self.engine.begin() as conn:
            conn.execute(
                update(subs_t).where(subs_t.c.id.in_([sid for sid, _ in published])).values(published=True)
            )
            self._audit_many(conn, [(gid, "published", detail) for _, ids in published for gid in ids], actor)

    @translated
    def unpublished(self) -> list[Submission]:
        with Session(self.engine, expire_on_commit=False) as session:
            stmt = select(Submission).where(Submission.status == "allow", Submission.published == False)  # noqa: E712
            return list(session.exec(stmt).all())

    @translated
    def touch_requeued(self, gate_id: str, actor: str, detail: str) -> None:
        with Session(self.engine) as session:
            gate = self._locked(session, gate_id)
            if gate is None or gate.terminal:
                return
            gate.updated_at = utcnow()
            gate.claim = None  # its message is known lost: the next start is a new attempt
            session.add(gate)
            self._audit(session, gate_id, "requeued", actor, detail)
            session.commit()

    @translated
    def open_gates(self, older_than: datetime) -> list[Gate]:
        with Session(self.engine, expire_on_commit=False) as session:
            stmt = select(Gate).where(col(Gate.status).in_(OPEN_STATUSES), col(Gate.updated_at) < older_than)
            return list(session.exec(stmt).all())

    @translated
    def overdue(self, now: datetime) -> list[Gate]:
        with Session(self.engine, expire_on_commit=False) as session:
            stmt = select(Gate).where(col(Gate.status).in_(OPEN_STATUSES), col(Gate.deadline) < now)
            return list(session.exec(stmt).all())

    @translated
    def audit_trail(self, gate_id: str) -> list[AuditEvent]:
        with Session(self.engine, expire_on_commit=False) as session:
            stmt = select(AuditEvent).where(AuditEvent.gate_id == gate_id).order_by(col(AuditEvent.id))
            return list(session.exec(stmt).all())

    def create_tables(self) -> None:
        """Create the tables a fresh database lacks (what ``make_engine`` does on start-up)."""
        SQLModel.metadata.create_all(self.engine)

    @translated
    def waiting(self, status: GateStatus, limit: int = 100) -> list[Gate]:
        """Gates waiting for a person, oldest first: in review, or quarantined and not yet reviewed."""
        stmt = select(Gate).where(Gate.status == status)
        if status == GateStatus.quarantine:
            stmt = stmt.where(not_reviewed())
        with Session(self.engine, expire_on_commit=False) as session:
            return list(session.exec(stmt.order_by(col(Gate.updated_at)).limit(limit)).all())

    @translated
    def record_review(self, review: Review, actor: str, sha256: str) -> list[Submission] | None:
        """Record a person's decision if the gate is still in ``review.was``, with its audit row.

        Returns the submissions of this artifact now allowed under every policy (to publish), or
        ``None`` when the gate left ``was`` meanwhile (nothing recorded).
        """
        with Session(self.engine) as session:
            # An UPDATE returns a CursorResult (which has rowcount); Session.execute is typed as Result.
            changed = cast(
                "CursorResult[Any]",
                session.execute(
                    update(Gate)
                    .where(col(Gate.id) == review.gate_id, col(Gate.status) == review.was)
                    .values(
                        status=review.decision,
                        decision=review.decision,
                        report=review.report,
                        updated_at=utcnow(),
                        reason=review.reason[:500],
                    )
                ),
            ).rowcount
            if not changed:
                return None
            self._audit(session, review.gate_id, f"{REVIEWED}{review.decision}", actor, review.note)
            reopened = review.decision == GateStatus.allow
            ready = self._resolve_submissions(session.connection(), [sha256], reopen=True) if reopened else []
            session.commit()
        return ready
