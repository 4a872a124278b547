"""The gate's steps as plain functions over a ``Runtime``; the Celery tasks are thin wrappers.

pre-check -> (chord) one detect per detector -> decide (quorum) -> route.
Every step is idempotent: the gate row is the source of truth, and a
redelivered step on a decided gate does nothing.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import Any

import structlog

from policies import HarmPolicy, load_policy
from policies.loader import PolicyError
from worker.core.detector import Artifact, cast_vote, error_vote
from worker.core.errors import DetectorError
from worker.core.models import Coverage, ErrorKind, PolicyRef, PrecheckResult, Report, Timings, Vote
from worker.core.quorum import decide_quorum
from worker.db import Gate, utcnow
from worker.detectors import detector_for
from worker.runtime import Runtime
from worker.storage import sha256_hex

log = structlog.get_logger("canary.gate")


class GateSkip(Exception):
    """The gate is already decided (or unknown): nothing to do."""


class ArtifactCorrupt(Exception):
    """The stored bytes do not hash to the gate's sha256: never classify them."""


def load_artifact(rt: Runtime, gate: Gate) -> Artifact:
    data = rt.reader.get(gate.object_key)
    if sha256_hex(data) != gate.sha256:
        raise ArtifactCorrupt("artifact bytes do not match their sha256")
    return Artifact(sha256=gate.sha256, data=data)


def gate_policy(gate: Gate) -> HarmPolicy:
    policy = load_policy(gate.policy_ref)
    if policy.sha256 != gate.policy_sha256:
        raise PolicyError(
            f"policy {gate.policy_id} changed since submission "
            f"({gate.policy_sha256[:12]} -> {policy.sha256[:12]})"
        )
    return policy


def begin(rt: Runtime, gate_id: str) -> tuple[Gate, HarmPolicy, Artifact] | None:
    """Start an attempt; returns ``None`` when the gate was routed to review instead."""
    gate = rt.repo.start(gate_id, rt.actor)
    if gate is None:
        raise GateSkip(gate_id)
    if gate.attempts > rt.settings.max_attempts:
        fail(rt, gate_id, f"too many attempts ({gate.attempts - 1})")
        return None
    try:
        policy = gate_policy(gate)
        artifact = load_artifact(rt, gate)
    except (PolicyError, ArtifactCorrupt) as exc:
        fail(rt, gate_id, str(exc))
        return None
    return gate, policy, artifact


def precheck_step(rt: Runtime, artifact: Artifact, policy: HarmPolicy) -> tuple[PrecheckResult, float]:
    from worker.core.precheck import run_precheck

    started = time.perf_counter()
    result = run_precheck(artifact.data, policy)
    return result, (time.perf_counter() - started) * 1000


def gate_ref(gate: Gate) -> dict[str, Any]:
    """What a detect subtask needs, so the fan-out never touches the database."""
    return {
        "policy_ref": gate.policy_ref,
        "policy_sha256": gate.policy_sha256,
        "policy_id": gate.policy_id,
        "object_key": gate.object_key,
        "sha256": gate.sha256,
        "size": gate.size,
    }


def detect_step(rt: Runtime, gate_id: str, detector_name: str, ref: dict[str, Any] | None = None) -> Vote:
    """Run one detector; every failure becomes an invalid vote, never an exception."""
    if ref is None:
        row = rt.repo.get(gate_id)
        if row is None:
            return error_vote(detector_name, "unknown", ErrorKind.missing, "gate not found")
        ref = gate_ref(row)
    gate = Gate(id=gate_id, deadline=utcnow(), policy_version="", **ref)
    started = time.perf_counter()
    backend = "unknown"
    try:
        policy = gate_policy(gate)
        spec = next((d for d in policy.quorum.detectors if d.name == detector_name), None)
        if spec is None:
            return error_vote(
                detector_name, backend, ErrorKind.missing, "detector not in policy", 0, gate.size
            )
        detector = detector_for(policy, spec)
        backend = detector.backend
        artifact = load_artifact(rt, gate)
        answer = detector.answer(artifact, policy)
        elapsed = (time.perf_counter() - started) * 1000
        if elapsed > spec.timeout_s * 1000:
            return error_vote(
                detector_name, backend, ErrorKind.timeout, "answer came too late", elapsed, gate.size
            )
        return cast_vote(detector_name, backend, answer, policy.protocol, elapsed)
    except DetectorError as exc:
        kind, detail = exc.kind, f"{type(exc).__name__}: {exc.message}"
    except Exception as exc:  # noqa: BLE001 - any detector failure is an invalid vote
        from celery.exceptions import SoftTimeLimitExceeded

        if isinstance(exc, SoftTimeLimitExceeded):
            kind, detail = ErrorKind.timeout, "soft time limit"
        else:
            kind, detail = ErrorKind.exception, type(exc).__name__
    elapsed = (time.perf_counter() - started) * 1000
    log.warning("detector_failed", gate_id=gate_id, detector=detector_name, error=kind.value)
    return error_vote(detector_name, backend, kind, detail, elapsed, gate.size)


def parse_votes(raw: Sequence[Any]) -> list[Vote]:
    votes: list[Vote] = []
    for item in raw:
        try:
            votes.append(Vote.model_validate(item))
        except (ValueError, TypeError):
            continue
    return votes


def decide_step(
    rt: Runtime,
    gate_id: str,
    precheck: PrecheckResult,
    votes: Sequence[Vote],
    precheck_ms: float = 0.0,
    reason_override: str | None = None,
) -> Report | None:
    """Apply the quorum, record the decision once, and route. Returns the report."""
    gate = rt.repo.get(gate_id)
    if gate is None or gate.terminal:
        return None
    try:
        policy = gate_policy(gate)
        required, expected = policy.quorum.required, [d.name for d in policy.quorum.detectors]
    except PolicyError as exc:
        required, expected, reason_override = 1, ["?"], str(exc)
    if reason_override:
        decision, reason = "review", reason_override
    else:
        decision, reason = decide_quorum(precheck, votes, required, expected)
    report = build_report(gate, decision, reason, precheck, votes, precheck_ms)
    route(rt, gate, report)
    return report


def build_report(
    gate: Gate,
    decision: str,
    reason: str,
    precheck: PrecheckResult,
    votes: Sequence[Vote],
    precheck_ms: float,
) -> Report:
    valid = [v.coverage for v in votes if v.valid and v.coverage is not None]
    scanned = min((c.scanned_bytes for c in valid), default=gate.size if precheck.verdict == "harmful" else 0)
    total_ms = (utcnow() - gate.created_at).total_seconds() * 1000
    return Report(
        gate_id=gate.id,
        sha256=gate.sha256,
        policy=PolicyRef(id=gate.policy_id, version=gate.policy_version, sha256=gate.policy_sha256),
        decision=decision,  # type: ignore[arg-type]
        reason=reason,
        precheck=precheck,
        votes=tuple(votes),
        coverage=Coverage(total_bytes=gate.size, scanned_bytes=min(scanned, gate.size), segments=len(valid)),
        timings=Timings(
            precheck_ms=round(precheck_ms, 3),
            detectors_ms=round(max((v.latency_ms for v in votes), default=0.0), 3),
            total_ms=round(max(total_ms, 0.0), 3),
        ),
        size_bytes=gate.size,
    )


def route(rt: Runtime, gate: Gate, report: Report) -> None:
    """Side effects first (idempotent puts/publishes), then the one-time state change."""
    payload = report.model_dump(mode="json")
    body = json.dumps(payload, sort_keys=True).encode()
    if report.decision == "quarantine":
        data = rt.reader.get(gate.object_key)
        rt.quarantine.put(f"{gate.id}/artifact", data, encrypt=True)
        rt.quarantine.put(f"{gate.id}/report.json", body, encrypt=True, content_type="application/json")
    elif report.decision == "review":
        rt.review.publish(
            {"gate_id": gate.id, "sha256": gate.sha256, "object_key": gate.object_key, "report": payload},
            message_id=gate.id,
        )
    resolution = rt.repo.finish(gate.id, report.decision, report.reason, body.decode(), rt.actor)
    if resolution.won:
        log.info("gate_decided", gate_id=gate.id, policy=gate.policy_id, decision=report.decision)
    for submission in resolution.publish:
        if submission.gates == [gate.id]:
            gate.status, gate.report = report.decision, body.decode()
            publish_allowed(rt, submission.id, submission.gates, known=[gate])
        else:
            publish_allowed(rt, submission.id, submission.gates)


def publish_allowed(
    rt: Runtime, submission_id: str, gate_ids: Sequence[str], known: Sequence[Gate] = ()
) -> None:
    """Publish an artifact allowed under every policy it was submitted under."""
    gates = {g.id: g for g in known} if known else rt.repo.get_many(gate_ids)
    ordered = [gates[g] for g in gate_ids if g in gates]
    if len(ordered) != len(gate_ids) or any(g.status != "allow" for g in ordered):
        return
    reports = [json.loads(g.report or "{}") for g in ordered]
    first = ordered[0]
    rt.allowed.publish(
        {
            "gate_id": first.id,
            "submission_id": submission_id,
            "gate_ids": list(gate_ids),
            "sha256": first.sha256,
            "object_key": first.object_key,
            "object_store": rt.store.location,
            "policies": [g.policy_id for g in ordered],
            "report": reports[0],
            "reports": reports,
        },
        message_id=submission_id,
    )
    rt.repo.mark_published(submission_id, [g.id for g in ordered], rt.actor, f"queue={rt.allowed.location}")


def fail(rt: Runtime, gate_id: str, reason: str) -> Report | None:
    """Send a gate to review because the gate itself failed (fail closed)."""
    log.warning("gate_failed", gate_id=gate_id, reason=reason)
    empty = PrecheckResult(verdict="harmless")
    return decide_step(rt, gate_id, empty, [], reason_override=reason)
