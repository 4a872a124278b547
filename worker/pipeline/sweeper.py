"""The stuck-gate sweeper: nothing is lost, nothing waits forever.

- a gate past its deadline, or past ``max_attempts``, goes to review;
- a ``pending``/``running`` gate untouched for ``requeue_after_s`` is re-enqueued
  (its message was lost, or its worker died with it);
- an allowed submission whose message was not published yet is published.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import structlog

from worker.adapters.db import utcnow
from worker.pipeline.routing import publish_allowed
from worker.pipeline.runtime import Runtime
from worker.pipeline.steps import fail

log = structlog.get_logger("canary.sweeper")


def sweep(rt: Runtime, enqueue: Callable[[str], None]) -> dict[str, int]:
    now = utcnow()
    counts = {"overdue": 0, "gave_up": 0, "requeued": 0, "published": 0}
    for gate in rt.repo.overdue(now):
        if fail(rt, gate.id, "deadline exceeded"):
            counts["overdue"] += 1
    stale_before = now - timedelta(seconds=rt.settings.requeue_after_s)
    for gate in rt.repo.open_gates(stale_before):
        if gate.attempts >= rt.settings.max_attempts:
            if fail(rt, gate.id, f"gave up after {gate.attempts} attempts"):
                counts["gave_up"] += 1
            continue
        rt.repo.touch_requeued(gate.id, "sweeper", f"status={gate.status} attempts={gate.attempts}")
        enqueue(gate.id)
        counts["requeued"] += 1
    for sub in rt.repo.unpublished():
        publish_allowed(rt, sub.id, sub.gates)
        counts["published"] += 1
    if any(counts.values()):
        log.info("sweep", **counts)
    return counts
