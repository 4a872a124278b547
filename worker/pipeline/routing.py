"""Routing a decided gate: the quarantine bucket, the review queue, or (once every policy of its
submission allows it) the allowed queue. The one home of quarantine writes and publishing.

Side effects come first (idempotent puts and publishes), then the one-time state changes.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence

import structlog

from worker.adapters import stage_metrics
from worker.adapters.db import Gate, GateStatus, Outcome
from worker.adapters.signing import sign_allowed
from worker.core.models import Report
from worker.pipeline.runtime import Runtime

log = structlog.get_logger("canary.gate")


def quarantine(rt: Runtime, gate_id: str, report: str, data: bytes | None = None) -> None:
    """Write a gate's report (and, when given, its bytes) to the encrypted quarantine bucket."""
    if data is not None:
        rt.quarantine.put(f"{gate_id}/artifact", data, encrypt=True)
    rt.quarantine.put(
        f"{gate_id}/report.json", report.encode(), encrypt=True, content_type="application/json"
    )


def route_many(rt: Runtime, decided: Sequence[tuple[Gate, Report]]) -> set[str]:
    """Route each decided gate, then record the decisions; returns the gates whose decision
    was recorded.

    The state changes of the batch share one transaction, each conditional on its own gate
    still being open; allowed submissions are published after that commit.
    """
    outcomes: list[Outcome] = []
    for gate, report in decided:
        payload = report.model_dump(mode="json")
        body = json.dumps(payload, sort_keys=True)
        if report.decision == "quarantine":
            quarantine(rt, gate.id, body, rt.reader.get(gate.object_key))
        elif report.decision == "review":
            rt.review.publish(
                {"gate_id": gate.id, "sha256": gate.sha256, "object_key": gate.object_key, "report": payload},
                message_id=gate.id,
            )
        outcomes.append(Outcome(gate.id, report.decision, report.reason, body))
    if not outcomes:
        return set()
    won, publish = rt.repo.finish_many(outcomes, rt.actor)
    known: dict[str, Gate] = {}
    for (gate, report), outcome in zip(decided, outcomes, strict=True):
        if gate.id in won:
            log.info("gate_decided", gate_id=gate.id, policy=gate.policy_id, decision=report.decision)
            gate.status, gate.report = GateStatus(report.decision), outcome.report
            known[gate.id] = gate
    publish_submissions(rt, [(sub.id, sub.gates) for sub in publish], known)
    return won


def publish_submissions(
    rt: Runtime, submissions: Sequence[tuple[str, Sequence[str]]], known: dict[str, Gate] | None = None
) -> None:
    """Publish each allowed submission, then record all of them as published in one transaction."""
    if not submissions:
        return
    known = known or {}
    started = time.perf_counter()
    missing = {gid for _, ids in submissions for gid in ids if gid not in known}
    gates = {**(rt.repo.get_many(missing) if missing else {}), **known}
    done = [(sid, list(ids)) for sid, ids in submissions if _publish_one(rt, sid, ids, gates)]
    rt.repo.mark_published_many(done, rt.actor, f"queue={rt.allowed.location}")
    if done:
        stage_metrics.observe("publish", (time.perf_counter() - started) / len(done), len(done))


def publish_allowed(
    rt: Runtime, submission_id: str, gate_ids: Sequence[str], known: Sequence[Gate] = ()
) -> None:
    """Publish an artifact allowed under every policy it was submitted under."""
    publish_submissions(rt, [(submission_id, gate_ids)], {g.id: g for g in known})


def _publish_one(rt: Runtime, submission_id: str, gate_ids: Sequence[str], gates: dict[str, Gate]) -> bool:
    ordered = [gates[g] for g in gate_ids if g in gates]
    if len(ordered) != len(gate_ids) or any(g.status != GateStatus.allow for g in ordered):
        return False
    reports = [json.loads(g.report or "{}") for g in ordered]
    first = ordered[0]
    rt.allowed.publish(
        {
            "gate_id": first.id,
            "submission_id": submission_id,
            "gate_ids": list(gate_ids),
            "sha256": first.sha256,
            "decision": "allow",
            "signature": sign_allowed(rt.settings, submission_id, first.sha256),
            "object_key": first.object_key,
            "object_store": rt.store.location,
            "policies": [g.policy_id for g in ordered],
            "report": reports[0],
            "reports": reports,
        },
        message_id=submission_id,
    )
    return True
