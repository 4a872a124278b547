"""The gate table's gauges, read at scrape time by the metrics collector (``worker.adapters.metrics``).

Errors are not translated here: the collector reports any failure as ``canary_gate_database_up 0``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import func
from sqlalchemy import select as core_select
from sqlalchemy.engine import Engine

from worker.adapters.db.engine import aware
from worker.adapters.db.tables import OPEN_STATUSES, Gate, GateStatus, not_reviewed


class GateGauges:
    """Aggregate reads of the gate table (a part of ``GateRepo``)."""

    engine: Engine

    def snapshot(self, now: datetime) -> dict[str, Any]:
        """The gate table in a handful of aggregate queries, for the metrics collector: gates per
        status, the oldest open gate's age, overdue gates, most attempts of an open gate,
        decisions per policy, quarantined gates no person has reviewed. Errors are not
        translated: the collector reports any failure as ``canary_gate_database_up 0``."""
        table = Gate.__table__  # type: ignore[attr-defined]
        is_open = table.c.status.in_(OPEN_STATUSES)
        with self.engine.connect() as conn:
            statuses = conn.execute(core_select(table.c.status, func.count()).group_by(table.c.status)).all()
            oldest, attempts = conn.execute(
                core_select(func.min(table.c.created_at), func.max(table.c.attempts)).where(is_open)
            ).one()
            late = conn.execute(core_select(func.count()).where(is_open, table.c.deadline < now)).scalar_one()
            unreviewed = conn.execute(
                core_select(func.count()).where(table.c.status == GateStatus.quarantine, not_reviewed())
            ).scalar_one()
            decisions = conn.execute(
                core_select(table.c.policy_id, table.c.decision, func.count())
                .where(table.c.decision.is_not(None))
                .group_by(table.c.policy_id, table.c.decision)
            ).all()
        started = aware(oldest)
        return {
            "statuses": {str(status): int(n) for status, n in statuses},
            "oldest_age_s": max(0.0, (now - started).total_seconds()) if started else 0.0,
            "overdue": int(late or 0),
            "attempts_max_open": int(attempts or 0),
            "decisions": [(str(p), str(d), int(n)) for p, d, n in decisions],
            "unreviewed_quarantine": int(unreviewed or 0),
        }

    def oldest_open_by_policy(self, now: datetime) -> dict[str, float]:
        """Seconds since the oldest open gate of each policy was created (metrics collector)."""
        table = Gate.__table__  # type: ignore[attr-defined]
        stmt = (
            core_select(table.c.policy_id, func.min(table.c.created_at))
            .where(table.c.status.in_(OPEN_STATUSES))
            .group_by(table.c.policy_id)
        )
        with self.engine.connect() as conn:
            rows = conn.execute(stmt).all()
        return {
            str(policy): max(0.0, (now - at).total_seconds())
            for policy, t in rows
            if (at := aware(t)) is not None
        }
