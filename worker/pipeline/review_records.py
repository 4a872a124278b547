"""Reading the review trail back: the audit events of gates, and reviewed gates as labelled data.

``audit_events`` backs ``canary review audit``; ``reviewed_records`` backs ``canary review
export``: every gate a person decided, as a record in the dataset format ``canary eval`` and the
training code read (``id``, ``text``, ``label``, ``source``, ``policy``) plus the gate's report
and the reviewer's decision, so reviewed items become labelled data.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

from worker.adapters.db import AuditEvent
from worker.pipeline.ref import GateRef
from worker.pipeline.runtime import Runtime
from worker.pipeline.steps import ArtifactCorruptError, load_artifact
from worker.pipeline.stuck import parse_duration


def parse_since(text: str, now: datetime | None = None) -> datetime:
    """``--since``: a duration back from now (``2h``, ``7d``) or an ISO date/time (UTC if naive)."""
    try:
        return (now or datetime.now(UTC)) - timedelta(seconds=parse_duration(text))
    except ValueError:
        pass
    try:
        at = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(
            f"--since {text!r}: give a duration (2h, 7d) or an ISO date (2026-11-26T06:00)"
        ) from None
    return at if at.tzinfo else at.replace(tzinfo=UTC)


def _aware(at: datetime) -> datetime:
    return at if at.tzinfo else at.replace(tzinfo=UTC)


def audit_events(rt: Runtime, gate_id: str | None = None, since: datetime | None = None) -> list[AuditEvent]:
    """The audit trail in order: of one gate, or of every gate, from ``since`` on."""
    events = rt.repo.audit_events(gate_id)
    if since is not None:  # compared in Python: SQLite hands back naive times
        events = [e for e in events if _aware(e.at) >= since]
    return events


def reviewed_records(rt: Runtime, since: datetime | None = None) -> Iterator[dict[str, Any]]:
    """Each gate a person decided (its latest decision), as a labelled record; oldest first."""
    events = rt.repo.reviewed_events()
    latest = {e.gate_id: e for e in events if since is None or _aware(e.at) >= since}
    gates = rt.repo.gates_by_id(list(latest))
    for gate_id, event in latest.items():
        gate = gates.get(gate_id)
        if gate is None or gate.status not in ("allow", "quarantine"):
            continue
        try:
            data = load_artifact(rt, GateRef.of(gate)).data
        except (ArtifactCorruptError, OSError, KeyError):
            continue  # the bytes are gone or changed: no label for what cannot be shown
        report = json.loads(gate.report or "{}")
        yield {
            "id": gate.id,
            "text": data.decode("utf-8", errors="replace"),
            "label": "harmful" if gate.status == "quarantine" else "harmless",
            "source": gate.source,
            "policy": gate.policy_id,
            "sha256": gate.sha256,
            "review": report.get("review")
            or {"by": event.actor.removeprefix("person:"), "note": event.detail},
            "reviewed_at": _aware(event.at).isoformat(),
            "report": report,
        }
