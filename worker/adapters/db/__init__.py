"""The gate database: tables (``tables``), the portable repository that holds all of its SQL
(``repository``, its metrics reads in ``gauges``, its review and stuck-gate reads in ``reads``),
that repository's Postgres fast paths (``postgres``), the engines with the boundary that translates
the driver's errors (``engine``), and the small sibling repositories of the suppressions and the
intake's idempotency keys (``suppressions``, ``intake_keys``), the release references
fetched by the workers (``fetches``) and the gates that hold each release (``releases``). Nothing outside ``worker.adapters``
imports sqlalchemy or sqlmodel: code that types an engine names it ``worker.adapters.db.Engine``."""

from sqlalchemy.engine import Engine

from worker.adapters.db.engine import make_engine, make_reader_engine
from worker.adapters.db.fetches import FETCHED, INTAKE_FAILED, PENDING, Fetch, FetchRepo
from worker.adapters.db.releases import ReleaseGate, ReleaseGateRepo
from worker.adapters.db.repository import GateRepo
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
    deadline_from_now,
    gate_from_row,
    new_gate,
    not_reviewed,
    utcnow,
)

__all__ = [
    "FETCHED",
    "INTAKE_FAILED",
    "PENDING",
    "OPEN_STATUSES",
    "REVIEWED",
    "TERMINAL_STATUSES",
    "AuditEvent",
    "Engine",
    "Fetch",
    "FetchRepo",
    "Gate",
    "ReleaseGate",
    "ReleaseGateRepo",
    "GateRepo",
    "GateStatus",
    "Outcome",
    "Review",
    "Submission",
    "deadline_from_now",
    "gate_from_row",
    "new_gate",
    "make_engine",
    "make_reader_engine",
    "not_reviewed",
    "utcnow",
]
