"""The stuck-gate sweeper: nothing is lost, nothing waits forever.

- a gate past its deadline, or past ``max_attempts``, goes to review;
- a ``pending``/``running`` gate untouched for ``requeue_after_s`` whose message is known lost
  is re-enqueued (its message vanished, or its worker died with it). Known lost: no message in
  the broker (queued, or taken and not acknowledged) carries its id. A gate still queued is
  left alone however long it waits: a backlog is not a loss, and a re-sent copy would only
  queue behind the original. Re-sending releases the gate's claim, so the next start counts
  as a new attempt (the previous one is known dead);
- an allowed submission whose message was not published yet is published;
- a registry release recorded for a worker to fetch (``worker.pipeline.fetch``) and untouched for
  ``requeue_after_s`` whose ``canary.fetch`` message is known lost is sent again, or, past
  ``max_attempts``, recorded as ``intake_failed``.

Sweeps never overlap: each holds an expiring lock (``worker.adapters.broker.sweep_lock``); a
sweep that finds the lock taken does nothing (the beat schedule also expires sweep messages
older than one interval, so sweeps queued while no worker ran do not run back to back).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import structlog

from worker.adapters.broker import queued_gate_ids, sweep_lock
from worker.adapters.db import utcnow
from worker.pipeline.fetch import resend_stale
from worker.pipeline.routing import publish_allowed
from worker.pipeline.runtime import Runtime
from worker.pipeline.steps import fail

log = structlog.get_logger("canary.sweeper")

SWEEP_COUNTS = (
    "overdue",
    "gave_up",
    "requeued",
    "still_queued",
    "published",
    "fetch_requeued",
    "fetch_gave_up",
    "fetch_still_queued",
    "skipped",
)


def sweep(
    rt: Runtime, enqueue: Callable[[str], None], enqueue_fetch: Callable[[str], None] | None = None
) -> dict[str, int]:
    """One sweep, unless another one is running (then ``skipped`` is 1 and nothing else happens).

    ``enqueue_fetch`` sends a release fetch again; without it pending fetches are left alone."""
    settings = rt.settings
    ttl = max(settings.sweep_interval_s * 4, settings.hard_time_limit_s)
    with sweep_lock(settings.broker_url, settings.data_dir, ttl) as held:
        if not held:
            log.info("sweep_skipped", reason="another sweep holds the lock")
            return {key: int(key == "skipped") for key in SWEEP_COUNTS}
        counts = _sweep(rt, enqueue)
        if enqueue_fetch is not None:
            fetch_queue = [settings.fetch_queue]
            queued = queued_gate_ids(settings.broker_url, fetch_queue, settings.visibility_timeout)
            resend_stale(rt, enqueue_fetch, queued, counts)
        if any(counts.values()):
            log.info("sweep", **counts)
        return counts


def _sweep(rt: Runtime, enqueue: Callable[[str], None]) -> dict[str, int]:
    now = utcnow()
    counts = dict.fromkeys(SWEEP_COUNTS, 0)
    for gate in rt.repo.overdue(now):
        if fail(rt, gate.id, "deadline exceeded"):
            counts["overdue"] += 1
    stale_before = now - timedelta(seconds=rt.settings.requeue_after_s)
    stale = rt.repo.open_gates(stale_before)
    settings = rt.settings
    queued = (
        queued_gate_ids(settings.broker_url, [settings.task_queue], settings.visibility_timeout)
        if stale
        else set()
    )
    for gate in stale:
        if queued is not None and gate.id in queued:
            counts["still_queued"] += 1  # alive: a backlog, not a loss (the deadline still bounds it)
            continue
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
    return counts
