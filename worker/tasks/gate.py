"""Celery tasks: thin wrappers over ``worker.pipeline.steps``. The broker only carries gate ids and
``GateRef`` messages."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from celery import chord, current_app, shared_task
from celery.exceptions import SoftTimeLimitExceeded

from policies import HarmPolicy
from worker.adapters.db import Gate
from worker.core.errors import DatabaseUnavailableError, StorageError
from worker.core.models import PrecheckResult
from worker.pipeline.ref import GateRef, gate_snapshot, gates_from_snapshots
from worker.pipeline.runtime import runtime_for
from worker.pipeline.steps import (
    Pending,
    begin_many,
    decide_many,
    detect_chunks,
    detect_many,
    fail_many,
    precheck_step,
    votes_by_gate,
)
from worker.settings import Settings

# celery ships no type information, so mypy sees shared_task as Any: each task carries a narrow
# ignore[untyped-decorator] (the task bodies are still checked; the task objects are Any).

# Infrastructure hiccups (database restart, S3 blip) retry with backoff; the gate stays open
# meanwhile and the sweeper is the backstop if retries run out.
RETRY = {
    "autoretry_for": (DatabaseUnavailableError, StorageError),
    "retry_backoff": 0.5,
    "retry_backoff_max": 30,
    "retry_jitter": True,
    "max_retries": 8,
}


@shared_task(bind=True, name="canary.precheck", ignore_result=True, **RETRY)  # type: ignore[untyped-decorator]
def precheck_task(self: Any, gate_ids: str | list[str]) -> dict[str, int]:
    """Pre-check a batch of gates; block early on decisive evidence, else fan out the detectors.

    ``gate_ids`` is one id (a lone gate, the sweeper's re-enqueue) or the ids submitted
    together. One chord per policy in the batch (split further so that every detector fits
    its gates' worst case in the soft limit, see ``detect_chunks``): one detect subtask
    per detector over those gates, then one decide callback.
    """
    ids = [gate_ids] if isinstance(gate_ids, str) else list(gate_ids)
    rt = runtime_for(self.app)
    # In-process runs (the embedded default) have no other consumer and pick up their own
    # leftovers: they take a gate whatever its claim.
    started = begin_many(rt, ids, claim=None if self.request.is_eager else self.request.id)
    fail_many(rt, started.failed)
    blocked: dict[str, Pending] = {}
    groups: dict[str, list[tuple[GateRef, PrecheckResult, float]]] = {}
    policies: dict[str, HarmPolicy] = {}
    failed: list[tuple[str, str]] = []
    for gate, policy, artifact in started.ready:
        try:
            result, ms = precheck_step(rt, artifact, policy)
        except Exception as exc:  # noqa: BLE001 - one artifact's crash must not hold its batch
            failed.append((gate.id, f"pre-check failed: {type(exc).__name__}"))
            continue
        if result.verdict == "harmful" and not suppressed(rt, gate.policy_id, artifact.data, result):
            blocked[gate.id] = Pending(result, [], ms)
        else:
            groups.setdefault(policy.sha256, []).append((gate, result, ms))
            policies[policy.sha256] = policy
    fail_many(rt, failed)
    decide_many(rt, blocked)
    for key, members in groups.items():
        sizes = [gate.size for gate, _, _ in members]
        for start, end in detect_chunks(policies[key], sizes, rt.settings.soft_time_limit_s):
            fan_out(self.app, rt.settings, policies[key], members[start:end], started.rows)
    return {
        "skipped": len(ids) - len(started.ready) - len(started.failed) - len(started.deferred),
        "deferred": len(started.deferred),
        "failed": len(started.failed) + len(failed),
        "quarantined": len(blocked),
        "fanned_out": sum(len(m) for m in groups.values()),
    }


def fan_out(
    app: Any,
    settings: Settings,
    policy: HarmPolicy,
    members: list[tuple[GateRef, PrecheckResult, float]],
    rows: Mapping[str, Gate] | None = None,
) -> None:
    """The chord for one policy's gates: header = one detect per detector, body = decide (with
    the started rows' unchanging columns, so that it need not read them again)."""
    refs = [gate.to_message() for gate, _, _ in members]
    ids = [gate.id for gate, _, _ in members]
    runtime_for(app).progress.expect(ids, [spec.name for spec in policy.quorum.detectors])
    # What Flower and the worker log show for arguments: the detector and the gate ids, written
    # here rather than by Celery's saferepr walking every ref and pre-check (~0.2 ms per message).
    shown = repr(ids)
    header = [
        app.signature(
            "canary.detect",
            (spec.name, refs),
            soft_time_limit=min(
                sum(spec.budget_s(g.size) for g, _, _ in members), settings.soft_time_limit_s
            ),
            time_limit=settings.hard_time_limit_s,
            argsrepr=f"({spec.name!r}, {shown})",
        )
        for spec in policy.quorum.detectors
    ]
    # What the decide step needs besides the votes, as one JSON text: Celery deep-copies the
    # body's arguments into each detect message, and a string is copied by reference (0.3 ms
    # less per chord than the same data as nested dicts, measured in-process).
    context = {
        "prechecks": {gate.id: result.model_dump(mode="json") for gate, result, _ in members},
        "precheck_ms": {gate.id: ms for gate, _, ms in members},
        "gates": {gid: gate_snapshot(rows[gid]) for gid in ids if rows and gid in rows},
    }
    body = app.signature(
        "canary.decide",
        kwargs={"gate_ids": ids, "context": json.dumps(context, separators=(",", ":"))},
        argsrepr="(<votes of the header>,)",
        kwargsrepr=f"{{'gate_ids': {shown}}}",
    )
    body.link_error(app.signature("canary.chord_failed", kwargs={"gate_ids": ids}))
    chord(header, app=app)(body)


# ignore_result: the votes reach the chord's callback through the backend's chord join (its
# ``on_chord_part_return`` still runs), nothing reads a detect's own result key: not storing
# it saves a result write and a pub/sub publish per detector.
@shared_task(bind=True, name="canary.detect", ignore_result=True, **RETRY)  # type: ignore[untyped-decorator]
def detect_task(self: Any, detector: str, refs: list[dict[str, Any]]) -> dict[str, Any]:
    """One detector's votes over a batch, as data (``{gate_id: vote}``). Never raises for a detector
    failure; a storage or database error retries the task (its retries spent, the chord fails
    and every gate of the batch goes to review)."""
    parsed = [GateRef.from_message(ref) for ref in refs]
    gates = [ref for ref in parsed if ref is not None]
    rt = runtime_for(self.app)
    votes = detect_many(rt, detector, gates, (SoftTimeLimitExceeded,))
    rt.progress.voted(detector, {gid: vote.verdict or f"invalid:{vote.error}" for gid, vote in votes.items()})
    return {gid: vote.model_dump(mode="json") for gid, vote in votes.items()}


@shared_task(bind=True, name="canary.decide", ignore_result=True, **RETRY)  # type: ignore[untyped-decorator]
def decide_task(
    self: Any,
    votes: list[Any],
    gate_ids: list[str],
    prechecks: dict[str, Any] | None = None,
    precheck_ms: dict[str, float] | None = None,
    gates: dict[str, Any] | None = None,
    context: str | None = None,
) -> dict[str, str]:
    """The chord callback: each gate's quorum, report and routing. Idempotent on redelivery.

    ``context`` is the JSON text ``fan_out`` sends (pre-check results, their timings, the started
    gates); messages sent before it carry the same as ``prechecks``/``precheck_ms``/``gates``.
    A gate whose pre-check result is missing or unreadable goes to review.
    """
    if context is not None:
        prechecks, precheck_ms, gates = unpack_context(context)
    rt = runtime_for(self.app)
    timings = precheck_ms or {}
    by_gate = votes_by_gate(votes, gate_ids)
    pending: dict[str, Pending] = {}
    for gid in gate_ids:
        try:
            precheck = PrecheckResult.model_validate((prechecks or {})[gid])
        except (KeyError, ValueError):
            pending[gid] = Pending(PrecheckResult(verdict="harmless"), [], 0.0, "pre-check result missing")
            continue
        pending[gid] = Pending(precheck, by_gate[gid], float(timings.get(gid, 0.0)))
    reports = decide_many(rt, pending, gates_from_snapshots(gates))
    return {gid: report.decision for gid, report in reports.items()}


def unpack_context(context: Any) -> tuple[dict[str, Any], dict[str, float], dict[str, Any]]:
    """``(prechecks, precheck_ms, gates)`` of a decide message's context; empty where it is
    off-shape (the gates concerned then go to review, or have their rows read)."""
    try:
        unpacked = json.loads(context)
    except (TypeError, ValueError):
        return {}, {}, {}
    if not isinstance(unpacked, dict):
        return {}, {}, {}
    parts = [unpacked.get(key) for key in ("prechecks", "precheck_ms", "gates")]
    prechecks, timings, gates = (part if isinstance(part, dict) else {} for part in parts)
    return prechecks, timings, gates


@shared_task(name="canary.chord_failed", ignore_result=True)  # type: ignore[untyped-decorator]
def chord_failed(request: Any, exc: Any, traceback: Any, gate_ids: list[str] | None = None) -> None:
    """A detector subtask died hard (e.g. hard time limit): every gate of its batch goes to review."""
    reason = f"detector fan-out failed: {type(exc).__name__}"
    fail_many(runtime_for(current_app), [(gid, reason) for gid in gate_ids or []])


@shared_task(bind=True, name="canary.sweep")  # type: ignore[untyped-decorator]
def sweep_task(self: Any) -> dict[str, int]:
    """Beat-scheduled sweeper: overdue gates to review, lost gate and fetch messages re-enqueued."""
    from worker.pipeline.sweeper import sweep

    app = self.app
    return sweep(
        runtime_for(app),
        lambda gid: app.send_task("canary.precheck", (gid,), ignore_result=True),
        lambda fid: app.send_task("canary.fetch", (fid,), ignore_result=True),
    )


def suppressed(rt: Any, policy_id: str, data: bytes, result: PrecheckResult) -> bool:
    """Every piece of the pre-check's evidence is suppressed by a reviewer: run the detectors
    instead of blocking (the decide step names the suppressions). Fails closed: any error blocks."""
    from worker.pipeline.suppressions import covering

    try:
        return bool(covering(rt, policy_id, data, result))
    except Exception:  # noqa: BLE001
        return False
