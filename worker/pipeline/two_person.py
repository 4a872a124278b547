"""The two-person rule: a release of a decisive pre-check quarantine takes two reviewers.

The pre-check blocks alone only on decisive evidence (a known-bad pattern), so overturning it is
the riskiest thing a reviewer can do. When the gate's policy asks for it
(``review.two_person_release``, on by default), the first reviewer's release is recorded as a
request (audit event ``release-requested``, the gate stays in quarantine, visibly waiting), and
only a different reviewer's release carries it out; both names and notes are audited and kept in
the report's ``review``. A policy that cannot be loaded any more counts as asking for it.
"""

from __future__ import annotations

import json
from typing import Any

from worker.adapters.db import REVIEWED, AuditEvent, Gate
from worker.core.errors import UsageError
from worker.pipeline.runtime import Runtime

RELEASE_REQUESTED = "release-requested"
PERSON = "person:"


class SecondReviewerError(UsageError):
    """The reviewer who requested a release tried to approve it too."""


def needs_second_reviewer(gate: Gate) -> bool:
    """True for a gate quarantined by the pre-check on decisive evidence under a two-person policy."""
    from policies import PolicyError, load_policy

    report = json.loads(gate.report or "{}")
    if report.get("precheck", {}).get("verdict") != "harmful":
        return False
    try:
        return load_policy(gate.policy_ref).review.two_person_release
    except (PolicyError, OSError):
        return True


def release_request(rt: Runtime, gate_id: str) -> AuditEvent | None:
    """The open release request of a gate: the latest since its last person's decision."""
    found: AuditEvent | None = None
    for event in rt.repo.audit_trail(gate_id):
        if event.event == RELEASE_REQUESTED:
            found = event
        elif event.event.startswith(REVIEWED):
            found = None
    return found


def release_approval(rt: Runtime, gate: Gate, person: str, note: str) -> dict[str, Any] | None:
    """For a quarantine -> allow by ``person``: None when the release must wait (the request is
    recorded now), else what the report's ``review`` gains (the requester, when there is one)."""
    if not needs_second_reviewer(gate):
        return {}
    request = release_request(rt, gate.id)
    if request is None:
        rt.repo.add_audit([(gate.id, RELEASE_REQUESTED, note)], f"{PERSON}{person}")
        return None
    if request.actor == f"{PERSON}{person}":
        raise SecondReviewerError(
            f"gate {gate.id}: {person} requested this release; a second reviewer must approve it"
        )
    return {
        "requested_by": request.actor.removeprefix(PERSON),
        "request_note": request.detail,
        "requested_at": request.at.isoformat(),
    }
