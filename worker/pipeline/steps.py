"""The gate's steps as plain functions over a ``Runtime``; the Celery tasks are thin wrappers.

pre-check -> (chord) one detect per detector -> decide (quorum) -> route
(``worker.pipeline.routing``).
Every step is idempotent: the gate row is the source of truth, and a
redelivered step on a decided gate does nothing.

Steps work on a *batch* of gates (one message, one chord, for up to
``Settings.batch_size`` gates submitted together; a lone gate is a batch of
one). The batch only shares the coordination: each gate is started, voted on,
decided and routed on its own row, a detector failing on one artifact is an
invalid vote for that gate only, and a gate decided meanwhile is skipped.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import structlog

from policies import HarmPolicy
from policies.loader import PolicyError, PolicyResolver
from worker.adapters import stage_metrics
from worker.adapters.db import Gate, utcnow
from worker.adapters.storage import sha256_hex
from worker.core.detector import Artifact, cast_vote, error_vote
from worker.core.errors import CanaryError, DatabaseUnavailableError, DetectorError, StorageError
from worker.core.models import Coverage, Decision, ErrorKind, PolicyRef, PrecheckResult, Report, Timings, Vote
from worker.core.policy import SecondedDissent, ShortDissent
from worker.core.quorum import decide_quorum
from worker.detectors import detector_for
from worker.pipeline.ref import GateRef
from worker.pipeline.routing import route_many
from worker.pipeline.runtime import Runtime

log = structlog.get_logger("canary.gate")


class ArtifactCorruptError(CanaryError):
    """The stored bytes do not hash to the gate's sha256: never classify them."""


def load_artifact(rt: Runtime, ref: GateRef) -> Artifact:
    data = rt.reader.get(ref.object_key)
    if sha256_hex(data) != ref.sha256:
        raise ArtifactCorruptError("artifact bytes do not match their sha256")
    return Artifact(sha256=ref.sha256, data=data)


@dataclass
class Started:
    """The gates of a batch that are running now, and those to send to review instead."""

    ready: list[tuple[GateRef, HarmPolicy, Artifact]] = field(default_factory=list)
    rows: dict[str, Gate] = field(default_factory=dict)  # the ready gates' rows, as started
    failed: list[tuple[str, str]] = field(default_factory=list)
    deferred: list[str] = field(default_factory=list)


def begin_many(rt: Runtime, gate_ids: Sequence[str], claim: str | None = None) -> Started:
    """Start an attempt for each open gate of the batch (one transaction).

    Decided gates are left out (a redelivery); a gate past ``max_attempts``, with a changed
    policy or with corrupt bytes is listed in ``failed`` with its reason, for review; a gate
    whose bytes cannot be read now is ``deferred`` (left open for the sweeper). When no gate
    of the batch could be read, ``StorageError`` is raised so the whole task retries.
    ``claim`` is the starting message's id (see ``GateRepo.start_many``): a gate another live
    message holds is left out, like a decided one.
    """
    started = Started()
    policies = PolicyResolver()
    order = {gid: i for i, gid in enumerate(gate_ids)}
    for gate in sorted(rt.repo.start_many(gate_ids, rt.actor, claim), key=lambda g: order[g.id]):
        if gate.attempts > rt.settings.max_attempts:
            started.failed.append((gate.id, f"too many attempts ({gate.attempts - 1})"))
            continue
        ref = GateRef.of(gate)
        try:
            started.ready.append(
                (ref, policies.resolve(ref.policy_ref, ref.policy_sha256), load_artifact(rt, ref))
            )
            started.rows[gate.id] = gate
        except (PolicyError, ArtifactCorruptError) as exc:
            started.failed.append((gate.id, str(exc)))
        except StorageError as exc:
            # The store may be back later: this gate stays open (visibly ``running``) and the
            # sweeper re-enqueues it on its own; the rest of the batch goes on without it.
            log.warning("artifact_unreadable", gate_id=gate.id, error=type(exc).__name__)
            started.deferred.append(gate.id)
    if started.deferred and not started.ready and not started.failed:
        raise StorageError("no artifact of the batch could be read")  # the task retries
    return started


def precheck_step(rt: Runtime, artifact: Artifact, policy: HarmPolicy) -> tuple[PrecheckResult, float]:
    from worker.core.precheck import run_precheck

    started = time.perf_counter()
    result = run_precheck(artifact.data, policy)
    seconds = time.perf_counter() - started
    stage_metrics.observe("precheck", seconds)
    return result, seconds * 1000


def detect_chunks(policy: HarmPolicy, sizes: Sequence[int], soft_limit_s: float) -> list[tuple[int, int]]:
    """Cut gates (their byte sizes, in order) into ``[start, end)`` runs that may share a chord:
    every detector, at its declared worst case per gate (``DetectorSpec.budget_s``), still
    finishes the run within the soft time limit.

    So batching never times out a gate whose detector kept to its own budget. Detectors with
    20 s budgets under a 60 s limit: 3 gates per chord; a gate whose budget alone exceeds the
    limit goes alone (the limit is then what bounds it: a timeout vote, fail closed).
    """
    chunks: list[tuple[int, int]] = []
    start, spent = 0, 0.0
    for i, size in enumerate(sizes):
        cost = max((d.budget_s(size) for d in policy.quorum.detectors), default=soft_limit_s)
        if i > start and spent + cost > soft_limit_s:
            chunks.append((start, i))
            start, spent = i, 0.0
        spent += cost
    if start < len(sizes):
        chunks.append((start, len(sizes)))
    return chunks


def detect_step(
    rt: Runtime,
    ref: GateRef,
    detector_name: str,
    policies: PolicyResolver,
    timeouts: tuple[type[BaseException], ...] = (),
) -> Vote:
    """Run one detector; every failure of the detector becomes an invalid vote, never an exception.

    A storage or database error (the artifact cannot be read now) is no detector failure: it is
    raised, so the task retries as the pre-check and the decide do; a blip must not become an
    invalid vote (too few valid votes send benign items to review, and let the rest decide).

    ``timeouts`` are the exception types that mean "out of time" (the Celery layer passes its
    soft time limit's): they become ``timeout`` votes; any other exception an ``exception`` vote.
    """
    started = time.perf_counter()
    backend = "unknown"
    try:
        policy = policies.resolve(ref.policy_ref, ref.policy_sha256)
        spec = next((d for d in policy.quorum.detectors if d.name == detector_name), None)
        if spec is None:
            return error_vote(
                detector_name, backend, ErrorKind.missing, "detector not in policy", 0, ref.size
            )
        detector = detector_for(policy, spec)
        backend = detector.backend
        artifact = load_artifact(rt, ref)
        answer = detector.answer(artifact, policy)
        elapsed = (time.perf_counter() - started) * 1000
        if elapsed > spec.budget_s(ref.size) * 1000:
            return error_vote(
                detector_name, backend, ErrorKind.timeout, "answer came too late", elapsed, ref.size
            )
        return cast_vote(detector_name, backend, answer, policy.protocol, elapsed)
    except (StorageError, DatabaseUnavailableError):
        raise
    except DetectorError as exc:
        kind, detail = exc.kind, f"{type(exc).__name__}: {exc.message}"
    except timeouts:
        kind, detail = ErrorKind.timeout, "soft time limit"
    except Exception as exc:  # noqa: BLE001 - any detector failure is an invalid vote
        kind, detail = ErrorKind.exception, type(exc).__name__
    elapsed = (time.perf_counter() - started) * 1000
    log.warning("detector_failed", gate_id=ref.id, detector=detector_name, error=kind.value)
    return error_vote(detector_name, backend, kind, detail, elapsed, ref.size)


def detect_many(
    rt: Runtime,
    detector_name: str,
    refs: Sequence[GateRef],
    timeouts: tuple[type[BaseException], ...] = (),
) -> dict[str, Vote]:
    """One detector over a batch: a vote per gate, each failure confined to its own gate; each
    policy of the batch resolved once.

    Once the task's soft time limit fires, the gates not reached yet get a ``timeout`` vote
    without running: the task must return before its hard limit.
    """
    votes: dict[str, Vote] = {}
    policies = PolicyResolver()
    out_of_time = False
    for ref in refs:
        if out_of_time:
            detail = "soft time limit (batch)"
            votes[ref.id] = error_vote(detector_name, "unknown", ErrorKind.timeout, detail, 0.0, ref.size)
            continue
        vote = detect_step(rt, ref, detector_name, policies, timeouts)
        votes[ref.id] = vote
        out_of_time = vote.error == ErrorKind.timeout and vote.detail == "soft time limit"
    stage_metrics.record_votes(detector_name, votes.values())
    return votes


def parse_votes(raw: Sequence[Any]) -> list[Vote]:
    votes: list[Vote] = []
    for item in raw:
        try:
            votes.append(Vote.model_validate(item))
        except (ValueError, TypeError):
            continue
    return votes


def votes_by_gate(results: Sequence[Any], gate_ids: Sequence[str]) -> dict[str, list[Vote]]:
    """Split the chord's results (one ``{gate_id: vote}`` per detector) into each gate's votes.

    Anything off-shape (not a mapping, a stranger gate, an unparseable vote) is dropped: the
    quorum then counts that detector as missing for the gates concerned, never as harmless.
    """
    out: dict[str, list[Vote]] = {gid: [] for gid in gate_ids}
    for result in results:
        if not isinstance(result, dict):
            continue
        for gid, raw in result.items():
            if gid in out:
                out[gid].extend(parse_votes([raw]))
    return out


def decide_step(
    rt: Runtime,
    gate_id: str,
    precheck: PrecheckResult,
    votes: Sequence[Vote],
    precheck_ms: float = 0.0,
    reason_override: str | None = None,
) -> Report | None:
    """Apply the quorum, record the decision once, and route. Returns the report."""
    verdict = Pending(precheck, list(votes), precheck_ms, reason_override)
    return decide_many(rt, {gate_id: verdict}).get(gate_id)


@dataclass
class Pending:
    """What the decide step knows about one gate of the batch."""

    precheck: PrecheckResult
    votes: list[Vote] = field(default_factory=list)
    precheck_ms: float = 0.0
    reason_override: str | None = None
    note: str = ""  # appended to the reason (e.g. the suppressions that covered the evidence)


def decide_many(
    rt: Runtime, pending: dict[str, Pending], known: Mapping[str, Gate] | None = None
) -> dict[str, Report]:
    """Apply each gate's quorum, route it, and record its decision once. Returns the reports recorded.

    Gates already decided (a redelivered callback) or unknown are skipped. ``known`` are the
    gates as started (their unchanging columns, see ``gate_snapshot``): when every gate of the
    batch is known and allowed, their rows are not read again, as an allow has no side effect
    before ``finish_many``, whose update is conditional on the gate still being open. Any other
    decision (a quarantine or review writes or publishes first) reads the rows and skips the
    gates decided meanwhile.
    """
    if not pending:
        return {}
    started = time.perf_counter()
    policies = PolicyResolver()
    judged: dict[str, Report] = {}
    if known and all(gid in known for gid in pending):
        judged = {
            gid: judge(known[gid], unsuppressed(rt, known[gid], item), policies)
            for gid, item in pending.items()
        }
    if judged and all(report.decision == "allow" for report in judged.values()):
        decided = [(known[gid], report) for gid, report in judged.items()] if known else []
    else:
        gates = rt.repo.get_many(pending)
        decided = []
        for gate_id, item in pending.items():
            gate = gates.get(gate_id)
            if gate is not None and not gate.terminal:
                report = judged.get(gate_id) or judge(gate, unsuppressed(rt, gate, item), policies)
                decided.append((gate, report))
    won = route_many(rt, decided)
    if decided:
        stage_metrics.observe("decide", (time.perf_counter() - started) / len(decided), len(decided))
    return {gate.id: report for gate, report in decided if gate.id in won}


def judge(gate: Gate, item: Pending, policies: PolicyResolver) -> Report:
    """One gate's decision and report under its own policy's quorum (fail closed)."""
    reason_override = item.reason_override
    dissent: dict[str, float] = {}
    short: tuple[ShortDissent, ...] = ()
    colocate: int | None = None
    seconded: SecondedDissent | None = None
    try:
        policy = policies.resolve(gate.policy_ref, gate.policy_sha256)
        required, expected = policy.quorum.required, [d.name for d in policy.quorum.detectors]
        dissent, colocate = policy.quorum.dissent, policy.quorum.colocate_bytes
        short, seconded = policy.quorum.dissent_short, policy.quorum.dissent_seconded
    except PolicyError as exc:
        required, expected, reason_override = 1, ["?"], str(exc)
    decision: Decision
    if reason_override:
        decision, reason = "review", reason_override
    else:
        decision, reason = decide_quorum(
            item.precheck,
            item.votes,
            required,
            expected,
            dissent,
            colocate,
            dissent_short=short,
            dissent_seconded=seconded,
        )
    if item.note:
        reason = f"{reason}; {item.note}"
    return build_report(gate, decision, reason, item.precheck, item.votes, item.precheck_ms)


def unsuppressed(rt: Runtime, gate: Gate, item: Pending) -> Pending:
    """A harmful pre-check whose every piece of evidence a reviewer suppressed counts as harmless
    (the detectors' votes decide), and the reason names the suppressions (worker.pipeline.suppressions)."""
    if item.precheck.verdict != "harmful" or item.reason_override:
        return item
    from worker.pipeline.suppressions import covering, named

    try:
        used = covering(rt, gate.policy_id, load_artifact(rt, GateRef.of(gate)).data, item.precheck)
    except Exception:  # noqa: BLE001 - no suppression applies when it cannot be checked (fail closed)
        return item
    if not used:
        return item
    harmless = item.precheck.model_copy(update={"verdict": "harmless"})
    return Pending(harmless, item.votes, item.precheck_ms, None, named(used))


def build_report(
    gate: Gate,
    decision: Decision,
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
        decision=decision,
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


def fail(rt: Runtime, gate_id: str, reason: str) -> Report | None:
    """Send a gate to review because the gate itself failed (fail closed)."""
    return fail_many(rt, [(gate_id, reason)]).get(gate_id)


def fail_many(rt: Runtime, failures: Sequence[tuple[str, str]]) -> dict[str, Report]:
    """Send each gate to review with its own reason (fail closed)."""
    for gate_id, reason in failures:
        log.warning("gate_failed", gate_id=gate_id, reason=reason)
    empty = PrecheckResult(verdict="harmless")
    return decide_many(rt, {gid: Pending(empty, [], 0.0, reason) for gid, reason in failures})
