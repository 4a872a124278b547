"""The gate database: tables (``tables``), the portable repository that holds all of its SQL
(``repository``, its metrics reads in ``gauges``), that repository's Postgres fast paths
(``postgres``) and the engines with the boundary that translates the driver's errors (``engine``)."""

from worker.adapters.db.engine import make_engine, make_reader_engine
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
    not_reviewed,
    utcnow,
)

__all__ = [
    "OPEN_STATUSES",
    "REVIEWED",
    "TERMINAL_STATUSES",
    "AuditEvent",
    "Gate",
    "GateRepo",
    "GateStatus",
    "Outcome",
    "Review",
    "Submission",
    "deadline_from_now",
    "make_engine",
    "make_reader_engine",
    "not_reviewed",
    "utcnow",
]
