"""Postgres fast paths of the gate repository: one statement, one round trip where the portable
path takes several. ``GateRepo`` picks them when the engine is Postgres; SQLite (the embedded
default) takes the portable path in ``worker.adapters.db.repository``."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import String, column, text, update, values
from sqlalchemy import select as core_select
from sqlalchemy.engine import Connection, Engine
from sqlmodel import create_engine

from worker.adapters.db.tables import OPEN_STATUSES, Gate


def autocommit_engine(engine: Engine) -> Engine:
    """A small pool of autocommit sessions with ``synchronous_commit=off``, for plain reads and for
    single-statement transitions that are recoverable: one round trip each (no BEGIN/ROLLBACK
    around a read), no wait for the WAL flush.

    Recoverable means a transition whose loss in a database crash is recovered by design, its
    audit rows in the same statement (so lost together, never apart): a gate marked ``running``
    (it reverts to open, and the sweeper re-enqueues open gates) and a submission marked
    published (the sweeper republishes it; consumers de-duplicate by message id). WAL is flushed
    in order, so the next synchronous commit (a decision, an intake) makes every earlier one
    durable too: no later state survives without them. Never for a write that must be durable
    before something external happens (intake, decisions)."""
    return create_engine(
        engine.url,
        pool_size=2,
        max_overflow=3,
        pool_recycle=1800,
        isolation_level="AUTOCOMMIT",
        connect_args={"options": "-c synchronous_commit=off"},
    )


def start_many(
    engine: Engine, ids: list[str], actor: str, now: datetime, claim: str | None = None
) -> list[Gate]:
    """``GateRepo.start_many`` in one statement (the update and its audit rows, atomic as one
    statement is), one round trip, committed without waiting for the WAL flush."""
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
    with engine.connect() as conn:
        params = {"now": now, "ids": ids, "actor": actor, "claim": claim}
        rows = conn.execute(stmt, params).mappings().all()
    return [Gate(**row) for row in rows]


def finish_batch(
    conn: Connection, ordered: Sequence[tuple[str, str, str, str]], now: datetime
) -> dict[str, str]:
    """Several gates' decisions, ``(gate id, decision, reason, report)`` sorted by id: lock the open ones in id order (one lock order: no deadlocks
    with a concurrent redelivery), then one ``UPDATE … FROM (VALUES …)`` for all of them: two
    statements per batch instead of one per gate. Returns {gate id won: sha256}."""
    table = Gate.__table__  # type: ignore[attr-defined]
    ids = [gid for gid, *_ in ordered]
    lock = (
        core_select(table.c.id)
        .where(table.c.id.in_(ids), table.c.status.in_(OPEN_STATUSES))
        .order_by(table.c.id)
        .with_for_update()
    )
    open_ids = set(conn.execute(lock).scalars())
    rows = [row for row in ordered if row[0] in open_ids]
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


def mark_published_many(
    engine: Engine, published: Sequence[tuple[str, Sequence[str]]], actor: str, detail: str, now: datetime
) -> None:
    """``GateRepo.mark_published_many`` as one recoverable statement, one round trip."""
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
        "now": now,
        "actor": actor,
        "detail": detail[:500],
    }
    with engine.connect() as conn:
        conn.execute(stmt, params)


def upsert_insert(dialect: str) -> Any:
    """The dialect's ``insert`` (it has ``on_conflict_do_nothing``)."""
    if dialect == "postgresql":
        from sqlalchemy.dialects.postgresql import insert as pg_insert

        return pg_insert
    from sqlalchemy.dialects.sqlite import insert as sqlite_insert

    return sqlite_insert
