"""What each page shows, as plain data for the templates (no HTTP here)."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from worker.adapters.db import REVIEWED, Gate, utcnow
from worker.core.fields import reader_view
from worker.pipeline.review import ReviewError, artifact
from worker.pipeline.runtime import Runtime
from worker.pipeline.two_person import PERSON, needs_second_reviewer, release_request
from worker.web.review import queue
from worker.web.review.artifact import evidence_spans, model_windows, show

# The one-line notices a redirect may ask for (a code, never text from the request).
NOTICES = {
    "allow": "Allowed: the artifact goes to the allowed queue once every policy it was submitted under allows it.",
    "quarantine": "Quarantine confirmed.",
    "requested": "Release requested: a second reviewer must approve it (two-person rule).",
}


def age(when: datetime, now: datetime) -> str:
    """``when`` as a short age ("5m", "3h", "2d")."""
    if when.tzinfo is None:
        when = when.replace(tzinfo=now.tzinfo)
    seconds = max(0, int((now - when).total_seconds()))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def queue_page(rt: Runtime, filters: queue.Filters) -> dict[str, Any]:
    gates = queue.waiting_gates(rt, filters)
    counted = queue.counts(rt)
    policies = sorted({p for _, p in counted} | ({filters.policy} - {""}))
    now = utcnow()
    return {
        "gates": gates,
        "ages": {g.id: age(g.updated_at, now) for g in gates},
        "requested": queue.release_requested(rt, [g.id for g in gates if g.status == "quarantine"]),
        "counts": counted,
        "totals": {q: sum(n for (s, _), n in counted.items() if s == q) for q in queue.QUEUES},
        "policies": policies,
        "filters": filters,
        "age_choices": {k: v[0] for k, v in queue.AGES.items()},
    }


def _actions(gate: Gate, reviewed: bool, request_by: str | None, me: str) -> list[str]:
    """The forms the item page offers ``me``."""
    if gate.status == "review":
        return ["allow", "quarantine"]
    if gate.status != "quarantine" or reviewed:
        return []
    if request_by == me:
        return ["quarantine", "waiting"]
    return ["quarantine", "approve-release" if request_by else "release"]


def item_page(rt: Runtime, gate_id: str, me: str) -> dict[str, Any] | None:
    """Everything the item page shows; None when the gate is unknown."""
    gate = rt.repo.get(gate_id)
    if gate is None:
        return None
    report: dict[str, Any] = json.loads(gate.report or "{}")
    trail = rt.repo.audit_trail(gate.id)
    reviewed = any(e.event.startswith(REVIEWED) for e in trail)
    request = release_request(rt, gate.id) if gate.status == "quarantine" and not reviewed else None
    request_by = request.actor.removeprefix(PERSON) if request else None
    data: bytes | None
    problem = ""
    try:
        data = artifact(rt, gate.id)[1]
    except ReviewError as exc:
        data, problem = None, str(exc)
    precheck = report.get("precheck", {})
    read = reader_view(data) if data is not None else None  # JSON read as its fields: escapes undone
    return {
        "gate": gate,
        "report": report,
        "precheck": precheck,
        "evidence": precheck.get("evidence", []),
        "votes": report.get("votes", []),
        "coverage": report.get("coverage"),
        "shown": show(data, evidence_spans(report), read) if data is not None else None,
        "windows": model_windows(report, data, read=read) if data is not None else [],
        "problem": problem,
        "trail": trail,
        "review": report.get("review"),
        "two_person": gate.status == "quarantine" and needs_second_reviewer(gate),
        "release": request,
        "request_by": request_by,
        "actions": _actions(gate, reviewed, request_by, me),
    }
