"""The ``canary.fetch`` task: one recorded registry release fetched, diffed and gated, on its own
queue (``Settings.fetch_queue``) so that any host can serve it (``canary worker -Q``).

The body is ``worker.pipeline.fetch.fetch_release``. Each pool process keeps one polite registry
client (per-host limits and retries, ``producers.registry.polite``); a registry that stays
unreachable is retried by the task with backoff (``fetch_task_retries`` times), then recorded.
"""

from __future__ import annotations

import os
import random
from typing import Any

import httpx
from celery import shared_task

from producers.registry import Politeness, RegistryUnavailableError, polite_client
from worker.pipeline.fetch import fetch_release
from worker.pipeline.runtime import runtime_for
from worker.settings import Settings
from worker.tasks.gate import RETRY

_CLIENT: tuple[int, httpx.Client] | None = None


def registry_client(settings: Settings) -> httpx.Client:
    """This process's registry client (rebuilt after a fork: a pool process never shares one)."""
    global _CLIENT
    if _CLIENT is None or _CLIENT[0] != os.getpid():
        politeness = Politeness(
            per_host=settings.fetch_per_host,
            rate=settings.fetch_rate_per_host,
            retries=settings.fetch_client_retries,
        )
        _CLIENT = (os.getpid(), polite_client(politeness))
    return _CLIENT[1]


def retry_countdown(retries: int) -> float:
    """Seconds before the task's next try: 2, 4, 8... s (at most 60), with jitter."""
    base = min(60.0, 2.0 * 2**retries)
    return random.uniform(base / 2, base)


@shared_task(bind=True, name="canary.fetch", ignore_result=True, **RETRY)  # type: ignore[untyped-decorator]
def fetch_task(self: Any, fetch_id: str) -> dict[str, Any]:
    """Fetch, verify and diff one release, store the diff and open its gates; a release that
    cannot be had becomes an ``intake_failed`` record. Idempotent on redelivery."""
    app = self.app
    rt = runtime_for(app)
    settings: Settings = rt.settings

    def enqueue_batch(gate_ids: list[str]) -> None:
        app.send_task("canary.precheck", (gate_ids,), ignore_result=True)

    final = self.request.retries >= settings.fetch_task_retries
    try:
        outcome = fetch_release(rt, fetch_id, registry_client(settings), enqueue_batch, final=final)
    except RegistryUnavailableError as exc:
        raise self.retry(exc=exc, countdown=retry_countdown(self.request.retries)) from exc
    return {"status": outcome.status, "label": outcome.label, "gates": list(outcome.gate_ids)}
