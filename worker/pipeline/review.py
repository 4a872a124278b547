"""Human review: list gates waiting for a person, and record a person's decision.

Reviewers drain two queues:

- ``review``: gates the quorum could not decide. A person moves each to ``allow`` or
  ``quarantine``.
- ``quarantine``: gates blocked automatically that no person has looked at yet. A person
  confirms the quarantine, or releases a false positive to ``allow``, which needs a note
  saying why. The bytes and the report stay in the quarantine bucket as the record; its
  ``report.json`` gains the review.

An automatic ``allow`` is never reopened: the artifact has been published to agents already.
Every decision is audited with the person's name, routed like any other decision, and an
artifact is published to the allowed queue only once every policy it was submitted under
allows it.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from worker.adapters.db import Gate, GateStatus, Review, utcnow
from worker.core.errors import UsageError
from worker.core.normalize import INVISIBLE
from worker.pipeline.ref import GateRef
from worker.pipeline.routing import publish_allowed, quarantine
from worker.pipeline.runtime import Runtime
from worker.pipeline.steps import ArtifactCorruptError, load_artifact
from worker.pipeline.two_person import SecondReviewerError, release_approval

HumanDecision = Literal["allow", "quarantine"]
ReviewQueue = Literal["review", "quarantine"]


class ReviewError(UsageError):
    """The gate is unknown or not waiting for review."""


def waiting(rt: Runtime, limit: int = 100, queue: ReviewQueue = "review") -> list[Gate]:
    """Gates waiting for a person, oldest first: in review, or quarantined and not yet reviewed."""
    return rt.repo.waiting(GateStatus(queue), limit)


def resolve(rt: Runtime, gate_id: str, decision: HumanDecision, person: str, note: str = "") -> Gate:
    """Record ``person``'s decision for a gate in review or in quarantine, and route it.

    A release that the two-person rule holds back (worker.pipeline.two_person) is recorded as a
    request and the gate comes back still quarantined."""
    if not person.strip():
        raise ReviewError("a reviewer name is required")
    gate = rt.repo.get(gate_id)
    if gate is None or gate.status not in (GateStatus.review, GateStatus.quarantine):
        state = gate.status if gate else "unknown"
        raise ReviewError(f"gate {gate_id} is not waiting for a person ({state})")
    was = gate.status
    if was == GateStatus.quarantine and decision == "allow" and not note.strip():
        raise ReviewError("releasing a quarantined gate needs a note saying why (--note)")
    approval: dict[str, Any] | None = {}
    if was == GateStatus.quarantine and decision == "allow":
        try:
            approval = release_approval(rt, gate, person, note)
        except SecondReviewerError as exc:
            raise ReviewError(str(exc)) from exc
        if approval is None:  # the two-person rule: recorded as a request, still quarantined
            return gate
    report = json.loads(gate.report or "{}")
    report["review"] = {
        "by": person,
        "decision": decision,
        "from": was,
        "note": note[:500],
        "at": utcnow().isoformat(),
        **(approval or {}),
    }
    body = json.dumps(report, sort_keys=True)
    recorded = decision == "quarantine" or was == GateStatus.quarantine
    # From review, the bytes go along (checked first: if the store no longer holds what was
    # classified, nothing is recorded); a quarantined gate's bytes are there already.
    data = _checked_bytes(rt, gate) if recorded and was == GateStatus.review else None
    reason = f"reviewed by {person}: {decision} (was {was}: {gate.reason})"
    review = Review(gate_id, was, decision, body, reason, note)
    ready = rt.repo.record_review(review, f"person:{person}", gate.sha256)
    if ready is None:
        raise ReviewError(f"gate {gate_id} left {was} meanwhile")
    # Only the winner of the conditional update writes the bucket: two reviewers deciding at once
    # leave the record the database holds, never the loser's overwrite. A crash right here leaves
    # the database decided and the bucket behind; the bytes stay in the artifact store by sha256,
    # and a blocked gate stays blocked (only allowed gates are ever published).
    if recorded:
        quarantine(rt, gate.id, body, data)
    for sub in ready:
        publish_allowed(rt, sub.id, sub.gates)
    fresh = rt.repo.get(gate_id)
    assert fresh is not None
    return fresh


# What a terminal would act on or a reader would not see: C0/C1 controls (escape sequences), and
# every code point normalization treats as invisible (zero-width, bidi, variation selectors, tags),
# plus the rest of the invisible-operator block and the interlinear annotation marks.
_SHOWN = (
    frozenset(
        [
            *range(0x00, 0x09),
            *range(0x0B, 0x20),
            *range(0x7F, 0xA0),
            *range(0x2060, 0x2070),
            *range(0xFFF9, 0xFFFC),
        ]
    )
    | INVISIBLE
)
_WRITTEN_OUT = {cp: f"\\u{cp:04x}" for cp in _SHOWN}
HIDDEN_CODEPOINTS = _SHOWN  # what ``visible`` writes out (the web app marks each one)


def visible(data: bytes) -> str:
    """``data`` as text a reviewer can read safely: UTF-8 (invalid bytes as U+FFFD), every control,
    bidi, zero-width or tag character written out as ``\\uXXXX`` (newlines and tabs kept)."""
    return data.decode("utf-8", errors="replace").translate(_WRITTEN_OUT)


def artifact(rt: Runtime, gate_id: str) -> tuple[Gate, bytes]:
    """A gate and its artifact's bytes (from the object store, checked against the sha256)."""
    gate = rt.repo.get(gate_id)
    if gate is None:
        raise ReviewError(f"gate {gate_id} is unknown")
    return gate, _checked_bytes(rt, gate)


def _checked_bytes(rt: Runtime, gate: Gate) -> bytes:
    """The gate's artifact bytes; a ReviewError when the store no longer holds what was classified."""
    try:
        return load_artifact(rt, GateRef.of(gate)).data
    except ArtifactCorruptError as exc:
        raise ReviewError(f"gate {gate.id}: {exc}") from exc
