"""Intake: bytes to the object store, a gate row per policy, and only then a broker message.

Artifacts submitted together are enqueued together: one pre-check message carries the ids
of up to ``batch_size`` new gates (see ``worker.pipeline.steps`` for what a batch shares and what it
never does). A lone artifact is a batch of one, so its latency is that of a single gate.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from policies import load_policy
from worker.adapters import stage_metrics
from worker.adapters.db import Gate, Submission, deadline_from_now, new_gate
from worker.adapters.storage import artifact_key, sha256_hex
from worker.pipeline.routing import publish_allowed
from worker.pipeline.runtime import Runtime


@dataclass(frozen=True)
class Submitted:
    submission: Submission
    gates: list[Gate]
    created: list[bool]
    source: str = ""


def submit_artifact(
    rt: Runtime,
    data: bytes,
    policies: Sequence[str],
    enqueue: Callable[[str], None],
    source: str = "",
) -> Submitted:
    """Store ``data`` under its sha256, create (or find) one gate per policy, enqueue new ones.

    Submitting the same bytes under the same policy again returns the existing
    gate and enqueues nothing. Each new gate is enqueued on its own. A step that runs in this
    process while ``enqueue`` does (the embedded gate) reads ``data`` itself, not a copy from
    the store (:meth:`CachedReader.lending`).

    The rows are committed (visible) before the messages go out and durable before this
    returns, but the wait for the durable flush (a disk sync, ~3 ms) runs while the worker
    already starts on the gate, not before it (``GateRepo.register(durable=False)``).
    """
    submitted = store_and_register(rt, data, policies, source, durable=False)
    with rt.reader.lending(submitted.gates[0].object_key, data):
        for gate, is_new in zip(submitted.gates, submitted.created, strict=True):
            if is_new:
                enqueue(gate.id)
    if any(submitted.created):
        rt.repo.confirm_durable(submitted.submission.id)
    return finish_intake(rt, [submitted])[0]


def submit_many(
    rt: Runtime,
    items: Iterable[tuple[str, bytes]],
    policies: Sequence[str],
    enqueue_batch: Callable[[list[str]], None],
    batch_size: int | None = None,
    registered: Callable[[Submitted], None] | None = None,
) -> list[Submitted]:
    """Submit ``(source, bytes)`` items together: new gates go out ``batch_size`` per message.

    Each batch is enqueued as soon as it is full, so a long intake keeps the workers busy;
    the rest goes out at the end. The gate rows exist before their message is sent.
    ``registered`` hears of each item once its gate rows exist (``canary submit``'s progress).
    """
    size = max(1, batch_size or rt.settings.batch_size)
    out: list[Submitted] = []
    waiting: list[str] = []
    for source, data in items:
        submitted = store_and_register(rt, data, policies, source)
        if registered is not None:
            registered(submitted)
        waiting.extend(g.id for g, new in zip(submitted.gates, submitted.created, strict=True) if new)
        while len(waiting) >= size:
            enqueue_batch(waiting[:size])
            del waiting[:size]
        out.append(submitted)
    if waiting:
        enqueue_batch(waiting)
    return finish_intake(rt, out)


def store_and_register(
    rt: Runtime, data: bytes, policies: Sequence[str], source: str = "", durable: bool = True
) -> Submitted:
    """Bytes to the store (once per sha256), then one gate per policy and the submission row
    (``durable=False``: see ``submit_artifact``)."""
    if not policies:
        raise ValueError("at least one policy is required")
    started = time.perf_counter()
    loaded = [(ref, load_policy(ref)) for ref in dict.fromkeys(policies)]
    sha = sha256_hex(data)
    key = artifact_key(sha)
    if not rt.store.exists(key):
        rt.store.put(key, data, encrypt=True)  # server-side encryption, as in quarantine
    deadline = deadline_from_now(rt.settings.gate_deadline_s)
    fresh = [
        new_gate(
            sha256=sha,
            object_key=key,
            size=len(data),
            policy_ref=ref,
            policy_id=policy.id,
            policy_version=policy.version,
            policy_sha256=policy.sha256,
            source=source[:255],
            deadline=deadline,
        )
        for ref, policy in loaded
    ]
    gates, created, submission = rt.repo.register(fresh, actor=f"producer:{rt.actor}", durable=durable)
    stage_metrics.observe("intake", time.perf_counter() - started)
    return Submitted(submission, gates, created, source)


def finish_intake(rt: Runtime, submitted: Sequence[Submitted]) -> list[Submitted]:
    """Publish submissions whose gates were all decided before (deduplicated intake); fresh rows."""
    for sub in submitted:
        if not any(sub.created):
            for ready in rt.repo.resolve_now(sub.submission.sha256):
                publish_allowed(rt, ready.id, ready.gates)
    fresh = rt.repo.get_many(g.id for sub in submitted for g in sub.gates)
    return [Submitted(s.submission, [fresh[g.id] for g in s.gates], s.created, s.source) for s in submitted]
