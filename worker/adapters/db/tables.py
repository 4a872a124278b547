"""The gate database's tables: gates (the source of truth for a gate's state), submissions and
the append-only audit trail; the one home of gate statuses; and the values the repository
records (a gate's outcome, a person's review)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Any

from sqlalchemy import ColumnElement, Index, String, TypeDecorator, UniqueConstraint, exists
from sqlalchemy import inspect as sa_inspect
from sqlalchemy.orm import configure_mappers
from sqlmodel import Field, SQLModel, col


class GateStatus(StrEnum):
    """Where a gate stands. ``pending``/``running`` are open; the decisions are terminal."""

    pending = "pending"
    running = "running"
    allow = "allow"
    quarantine = "quarantine"
    review = "review"

    @property
    def terminal(self) -> bool:
        return self not in OPEN_STATUSES


OPEN_STATUSES: tuple[GateStatus, ...] = (GateStatus.pending, GateStatus.running)
TERMINAL_STATUSES: frozenset[GateStatus] = frozenset(GateStatus) - frozenset(OPEN_STATUSES)

REVIEWED = "reviewed:"  # audit event prefix of a person's decision (worker.pipeline.review)


class StatusColumn(TypeDecorator[GateStatus]):
    """A gate status stored as plain text (the column stays ``VARCHAR(16)``), read back as the enum."""

    impl = String(16)
    cache_ok = True

    def process_bind_param(self, value: Any, dialect: Any) -> str | None:
        return None if value is None else GateStatus(value).value

    def process_result_value(self, value: Any, dialect: Any) -> GateStatus | None:
        return None if value is None else GateStatus(value)


def utcnow() -> datetime:
    return datetime.now(UTC)


def new_id() -> str:
    return uuid.uuid4().hex


def deadline_from_now(seconds: float) -> datetime:
    return utcnow() + timedelta(seconds=seconds)


@dataclass(frozen=True)
class Outcome:
    """A gate's decision, ready to be recorded."""

    gate_id: str
    decision: str
    reason: str
    report: str


@dataclass(frozen=True)
class Review:
    """A person's decision on a gate in ``was`` (review or quarantine), ready to be recorded."""

    gate_id: str
    was: str
    decision: str
    report: str
    reason: str
    note: str


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
    status: GateStatus = Field(default=GateStatus.pending, sa_type=StatusColumn)
    decision: str | None = None
    reason: str | None = None
    report: str | None = None
    attempts: int = 0
    # The id of the message whose attempt holds the gate (``GateRepo.start_many``); cleared by
    # the sweeper when it re-sends a gate whose message is known lost.
    claim: str | None = Field(default=None, max_length=64)
    source: str = ""
    deadline: datetime
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow)
    decided_at: datetime | None = None

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL_STATUSES


GATE_COLUMNS: tuple[str, ...] = tuple(c.name for c in Gate.__table__.c)  # type: ignore[attr-defined]


def gate_from_row(values: Mapping[Any, Any]) -> Gate:
    """A ``Gate`` holding a database row's columns as they are, built the way the ORM builds the
    rows it loads: no validation, no defaults (~5 µs against ~100 µs for ``Gate(**row)``).

    For rows read back from the gates table only (every column present, as the database holds
    it); ``status`` may be the plain text of a statement that skipped the column's type.
    """
    gate: Gate = _empty(Gate)
    gate.__dict__.update(values)
    gate.__dict__["status"] = GateStatus(values["status"])
    return gate


def new_gate(**columns: Any) -> Gate:
    """A gate not stored yet, with ``Gate``'s own defaults (a new id, pending, no attempt, created
    now), built as ``gate_from_row`` builds one: the intake's, on a lone gate's path.
    ``columns`` are all the others (sha256, object_key, size, policy_*, source, deadline)."""
    now = utcnow()
    values = {**NEW_GATE, "id": new_id(), "created_at": now, "updated_at": now, **columns}
    if values.keys() != _GATE_COLUMN_SET:
        raise TypeError(f"a gate has the columns {GATE_COLUMNS}, not {tuple(values)}")
    return gate_from_row(values)


def _plain_defaults(cls: type[SQLModel]) -> dict[str, Any]:
    """A table class's columns with a fixed default, and that default (not the factory ones)."""
    return {
        name: field.default
        for name, field in cls.model_fields.items()
        if not field.is_required() and field.default_factory is None
    }


_GATE_COLUMN_SET = frozenset(GATE_COLUMNS)
# The columns of a gate row that start the same for every new gate (status pending, no decision,
# no attempt, ...), read off ``Gate`` itself so the two cannot drift.
NEW_GATE = _plain_defaults(Gate)


def _empty(cls: type[Any]) -> Any:
    """An empty instance of a table class as the ORM makes one. The mappers are configured first:
    until then a fresh process's instrumented attributes cannot be read (the ORM does this on its
    first query, and ``Gate(...)`` on its first call)."""
    factory = _FACTORIES.get(cls)
    if factory is None:
        configure_mappers()
        factory = _FACTORIES[cls] = sa_inspect(cls).class_manager.new_instance
    return factory()


_FACTORIES: dict[type[Any], Callable[[], Any]] = {}


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


def new_submission(sha256: str, gate_ids: Sequence[str]) -> Submission:
    """A submission not stored yet (``Submission``'s defaults), built as ``new_gate`` builds a gate."""
    sub: Submission = _empty(Submission)
    values = {"id": new_id(), "sha256": sha256, "gate_ids": json.dumps(list(gate_ids))}
    sub.__dict__.update(_NEW_SUBMISSION, **values, created_at=utcnow())
    return sub


_NEW_SUBMISSION = _plain_defaults(Submission)  # status pending, not published


class AuditEvent(SQLModel, table=True):
    """An append-only record of every transition: what, when, by whom."""

    __tablename__ = "audit_events"

    id: int | None = Field(default=None, primary_key=True)
    gate_id: str = Field(index=True, max_length=32)
    at: datetime = Field(default_factory=utcnow)
    event: str = Field(max_length=32)
    actor: str = Field(max_length=128)
    detail: str = ""


def not_reviewed() -> ColumnElement[bool]:
    """True for a gate no person has decided yet (no ``reviewed:*`` audit event).

    A correlated ``NOT EXISTS``: one lookup in the audit table's ``gate_id`` index per gate,
    not a scan of the whole (append-only, ever-growing) audit table.
    """
    return ~exists().where(
        col(AuditEvent.gate_id) == col(Gate.id), col(AuditEvent.event).startswith(REVIEWED)
    )
