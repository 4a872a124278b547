"""The gate database: tables (``tables``), the portable repository that holds all of its SQL
(``repository``) and that repository's Postgres fast paths (``postgres``)."""

from worker.adapters.db.repository import (
    GateRepo,
    Outcome,
    Review,
    make_engine,
    make_reader_engine,
    not_reviewed,
)
from worker.adapters.db.tables import (
    OPEN_STATUSES,
    REVIEWED,
    TERMINAL_STATUSES,
    AuditEvent,
    Gate,
    GateStatus,
    Submission,
    deadline_from_now,
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
