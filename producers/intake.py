"""Intake: bytes to the object store, a gate row per policy, and only then a broker message."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from policies import load_policy
from worker.db import Gate, Submission, deadline_from_now
from worker.gate import publish_allowed
from worker.runtime import Runtime
from worker.storage import artifact_key, sha256_hex


@dataclass(frozen=True)
class Submitted:
    submission: Submission
    gates: list[Gate]
    created: list[bool]


def submit_artifact(
    rt: Runtime,
    data: bytes,
    policies: Sequence[str],
    enqueue: Callable[[str], None],
    source: str = "",
) -> Submitted:
    """Store ``data`` under its sha256, create (or find) one gate per policy, enqueue new ones.

    Submitting the same bytes under the same policy again returns the existing
    gate and enqueues nothing.
    """
    if not policies:
        raise ValueError("at least one policy is required")
    loaded = [(ref, load_policy(ref)) for ref in dict.fromkeys(policies)]
    sha = sha256_hex(data)
    key = artifact_key(sha)
    if not rt.store.exists(key):
        rt.store.put(key, data)
    gates: list[Gate] = []
    created: list[bool] = []
    for ref, policy in loaded:
        gate, is_new = rt.repo.create_or_get(
            Gate(
                sha256=sha,
                object_key=key,
                size=len(data),
                policy_ref=ref,
                policy_id=policy.id,
                policy_version=policy.version,
                policy_sha256=policy.sha256,
                source=source[:255],
                deadline=deadline_from_now(rt.settings.gate_deadline_s),
            ),
            actor=f"producer:{rt.actor}",
        )
        gates.append(gate)
        created.append(is_new)
    submission = rt.repo.create_submission(sha, [g.id for g in gates])
    for gate, is_new in zip(gates, created, strict=True):
        if is_new:
            enqueue(gate.id)
    if not any(created):  # every gate existed: the submission may be decided already
        for ready in rt.repo.resolve_now(sha):
            publish_allowed(rt, ready.id, ready.gates)
    fresh = rt.repo.get_many(g.id for g in gates)
    return Submitted(submission, [fresh[g.id] for g in gates], created)
