"""The gate database: tables, the portable repository and its Postgres fast paths."""

from worker.adapters.db.repository import (
    OPEN_STATUSES,
    REVIEWED,
    AuditEvent,
    Gate,
    GateRepo,
    Outcome,
    Resolution,
    Submission,
    deadline_from_now,
    make_engine,
    new_id,
    not_reviewed,
    utcnow,
)

__all__ = [
    "OPEN_STATUSES",
    "REVIEWED",
    "AuditEvent",
    "Gate",
    "GateRepo",
    "Outcome",
    "Resolution",
    "Submission",
    "deadline_from_now",
    "make_engine",
    "new_id",
    "not_reviewed",
    "utcnow",
]
