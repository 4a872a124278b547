"""Gates that should have moved by now, with the stage each is stuck in, for ``canary stuck``.

An open gate untouched for longer than a threshold is stuck in one of these stages:

    waiting for pre-check        pending: its pre-check message was never picked up (or was lost)
    in pre-check                 running, no detector fan-out recorded (the pre-check died or its
                                 message was lost after it started)
    detectors k of n voted       running, fanned out, k < n detectors voted (a detect message lost)
    callback not run             running, every detector voted, the decide callback never ran
    decided but not published    allowed under every policy, the allowed message not sent
    waiting for fetch            a registry release recorded for a worker to fetch, not fetched
                                 yet (its ``canary.fetch`` message waits, or was lost); its
                                 ``kind`` is ``fetch`` and its id a fetch id

The first four come from the gate row and the fan-out ledger (``worker.adapters.progress``); the
fifth from the submissions, the last from the ``fetches`` table (``worker.pipeline.fetch``). Each line carries the attempts, the age and the last actor in the
audit trail (the worker that last touched the gate). ``requeue`` and ``to_review`` act on them,
audited under the operator's name.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta

from worker.adapters.db import Gate, GateStatus, utcnow
from worker.adapters.progress import fan_out_state
from worker.pipeline.routing import publish_allowed
from worker.pipeline.runtime import Runtime
from worker.pipeline.steps import fail

FETCH_STAGE = "waiting for fetch"
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*$")
_UNIT_S = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_duration(text: str) -> float:
    """``"10m"`` -> 600.0 (s, m, h, d; a bare number is seconds); ValueError otherwise."""
    found = _DURATION.match(text.lower())
    if not found:
        raise ValueError(f"not a duration: {text!r} (e.g. 90s, 10m, 2h, 1d)")
    return float(found.group(1)) * _UNIT_S[found.group(2)]


@dataclass(frozen=True)
class StuckGate:
    gate_id: str
    policy: str
    status: str
    stage: str
    attempts: int
    age_s: float
    idle_s: float
    last_actor: str
    last_event: str
    submission_id: str = ""
    kind: str = "gate"  # or "fetch": a release reference, ``gate_id`` is its fetch id

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def _aware(value: datetime) -> datetime:
    from datetime import UTC

    return value if value.tzinfo else value.replace(tzinfo=UTC)


def stuck_gates(rt: Runtime, older_than_s: float, now: datetime | None = None) -> list[StuckGate]:
    """Open gates untouched for ``older_than_s`` and allowed submissions not published, oldest first."""
    now = now or utcnow()
    before = now - timedelta(seconds=older_than_s)
    gates, unpublished, last = rt.repo.stale(before)
    ledger = rt.progress.read([g.id for g in gates if g.status == GateStatus.running])
    out = []
    for gate in gates:
        actor, event = last.get(gate.id, ("", ""))
        out.append(
            StuckGate(
                gate_id=gate.id,
                policy=gate.policy_id,
                status=str(gate.status),
                stage=_stage(gate, ledger.get(gate.id, {}), gate.id in unpublished),
                attempts=gate.attempts,
                age_s=round((now - _aware(gate.created_at)).total_seconds(), 1),
                idle_s=round((now - _aware(gate.updated_at)).total_seconds(), 1),
                last_actor=actor,
                last_event=event,
                submission_id=unpublished.get(gate.id, ""),
            )
        )
    out.extend(_stuck_fetches(rt, before, now))
    return sorted(out, key=lambda s: -s.age_s)


def _stuck_fetches(rt: Runtime, before: datetime, now: datetime) -> list[StuckGate]:
    out = []
    for row in rt.fetch_repo.stale(before):
        trail = rt.repo.audit_trail(row.id)
        last = trail[-1] if trail else None
        out.append(
            StuckGate(
                gate_id=row.id,
                policy=",".join(row.policy_refs),
                status=row.status,
                stage=FETCH_STAGE,
                attempts=row.attempts,
                age_s=round((now - _aware(row.created_at)).total_seconds(), 1),
                idle_s=round((now - _aware(row.updated_at)).total_seconds(), 1),
                last_actor=last.actor if last else "",
                last_event=last.event if last else "",
                kind="fetch",
            )
        )
    return out


def _stage(gate: Gate, entry: dict[str, str], unpublished: bool) -> str:
    if unpublished and gate.status == GateStatus.allow:
        return "decided but not published"
    if gate.status == GateStatus.pending:
        return "waiting for pre-check"
    state = fan_out_state(entry)
    if state is None:
        return "in pre-check"
    voted, expected = state
    if voted < expected:
        return f"detectors {voted} of {expected} voted"
    return "callback not run"


def requeue(
    rt: Runtime,
    stuck: Sequence[StuckGate],
    operator: str,
    enqueue: Callable[[str], None],
    enqueue_fetch: Callable[[str], None] | None = None,
) -> int:
    """Send each stuck gate on again: open gates get a new pre-check message, allowed submissions
    their allowed message, pending fetches a new fetch message (when ``enqueue_fetch`` is given).
    Audited as ``requeued`` by ``operator:<name>``."""
    done = 0
    for item in stuck:
        if item.kind == "fetch":
            if enqueue_fetch is None:
                continue
            rt.fetch_repo.touch_requeued(item.gate_id, f"operator:{operator}", f"stage={item.stage}")
            enqueue_fetch(item.gate_id)
        elif item.submission_id:
            publish_allowed(rt, item.submission_id, _submission_gates(rt, item.submission_id))
        else:
            rt.repo.touch_requeued(item.gate_id, f"operator:{operator}", f"stage={item.stage}")
            enqueue(item.gate_id)
        done += 1
    return done


def to_review(rt: Runtime, stuck: Sequence[StuckGate], operator: str) -> int:
    """Send each stuck open gate to human review (fail closed), audited with the operator's name.
    A pending fetch has nothing to review yet: it ends ``intake_failed``, naming the operator."""
    moved = 0
    for item in stuck:
        if item.kind == "fetch":
            reason = f"given up by operator {operator} (stuck: {item.stage})"
            moved += rt.fetch_repo.fail(item.gate_id, reason, f"operator:{operator}")
            continue
        if item.submission_id:  # decided already: publishing is what is missing, not a decision
            continue
        if fail(rt, item.gate_id, f"sent to review by operator {operator} (stuck: {item.stage})"):
            rt.repo.add_audit(
                [(item.gate_id, "operator:to-review", f"stage={item.stage}")], f"operator:{operator}"
            )
            moved += 1
    return moved


def _submission_gates(rt: Runtime, submission_id: str) -> list[str]:
    return rt.repo.submission_gates(submission_id)
