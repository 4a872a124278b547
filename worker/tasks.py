"""Celery tasks: thin wrappers over ``worker.gate``. The broker only carries gate ids."""

from __future__ import annotations

from typing import Any

from celery import chord, current_app, shared_task
from sqlalchemy.exc import OperationalError

from worker.core.errors import StorageError
from worker.core.models import PrecheckResult
from worker.gate import GateSkip, begin, decide_step, detect_step, fail, gate_ref, parse_votes, precheck_step
from worker.runtime import runtime_for

# Infrastructure hiccups (database restart, S3 blip) retry with backoff; the gate stays open
# meanwhile and the sweeper is the backstop if retries run out.
RETRY = {
    "autoretry_for": (OperationalError, StorageError),
    "retry_backoff": 0.5,
    "retry_backoff_max": 30,
    "retry_jitter": True,
    "max_retries": 8,
}


@shared_task(bind=True, name="canary.precheck", ignore_result=True, **RETRY)
def precheck_task(self: Any, gate_id: str) -> str:
    """Pre-check the artifact; block early on decisive evidence, else fan out the detectors."""
    rt = runtime_for(self.app)
    try:
        started = begin(rt, gate_id)
    except GateSkip:
        return "skip"
    if started is None:
        return "review"
    gate, policy, artifact = started
    result, ms = precheck_step(rt, artifact, policy)
    if result.verdict == "harmful":
        decide_step(rt, gate_id, result, [], ms)
        return "quarantine"
    settings = rt.settings
    header = [
        self.app.signature(
            "canary.detect",
            (gate_id, spec.name, gate_ref(gate)),
            soft_time_limit=min(spec.timeout_s, settings.soft_time_limit_s),
            time_limit=settings.hard_time_limit_s,
        )
        for spec in policy.quorum.detectors
    ]
    body = self.app.signature(
        "canary.decide",
        kwargs={"gate_id": gate_id, "precheck": result.model_dump(mode="json"), "precheck_ms": ms},
    )
    body.link_error(self.app.signature("canary.chord_failed", kwargs={"gate_id": gate_id}))
    chord(header, app=self.app)(body)
    return "fanned-out"


@shared_task(bind=True, name="canary.detect")
def detect_task(self: Any, gate_id: str, detector: str, ref: dict[str, Any] | None = None) -> dict[str, Any]:
    """One detector's vote, as data. Never raises for a detector failure."""
    vote = detect_step(runtime_for(self.app), gate_id, detector, ref)
    return vote.model_dump(mode="json")


@shared_task(bind=True, name="canary.decide", ignore_result=True, **RETRY)
def decide_task(
    self: Any, votes: list[Any], gate_id: str, precheck: dict[str, Any], precheck_ms: float = 0.0
) -> str:
    """The chord callback: quorum, report, routing. Idempotent on redelivery."""
    rt = runtime_for(self.app)
    report = decide_step(
        rt, gate_id, PrecheckResult.model_validate(precheck), parse_votes(votes), precheck_ms
    )
    return report.decision if report else "skip"


@shared_task(name="canary.chord_failed", ignore_result=True)
def chord_failed(request: Any, exc: Any, traceback: Any, gate_id: str = "") -> None:
    """A detector subtask died hard (e.g. hard time limit): the gate goes to review."""
    fail(runtime_for(current_app), gate_id, f"detector fan-out failed: {type(exc).__name__}")


@shared_task(bind=True, name="canary.sweep")
def sweep_task(self: Any) -> dict[str, int]:
    """Beat-scheduled sweeper: overdue gates to review, lost messages re-enqueued."""
    from worker.sweeper import sweep

    app = self.app
    return sweep(runtime_for(app), lambda gid: app.send_task("canary.precheck", (gid,)))
