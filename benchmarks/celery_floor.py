"""The Celery floor under the gate: the same task shape with no gate work at all.

A ``floor.start`` task fans out a chord of three ``floor.vote`` tasks whose callback
``floor.done`` stamps the time in Redis: 1 + 3 + 1 task executions, like a lone gate's
pre-check, detectors and decide. It runs on an app built by ``worker.tasks.app.create_app`` (so with
the project's Celery settings: acks_late, prefetch 1, time limits, Redis result backend,
JSON) in a real prefork worker, on its own queue (``CANARY_TASK_QUEUE``: the chord's votes and
callback go to the app's default queue). ``bench_gates.py`` starts it, waits until it answers a
ping, and samples it in turn with lone gates, so what the gate adds on top of Celery is visible.

    CANARY_TASK_QUEUE=floor celery -A benchmarks.celery_floor worker --pool=prefork -Q floor
"""

from __future__ import annotations

import time
from typing import Any

import redis
from celery import chord

from worker.settings import Settings
from worker.tasks.app import create_app

settings = Settings()
app = create_app(settings, eager=False)
_stamps = redis.Redis.from_url(settings.backend_url())


@app.task(name="floor.start", ignore_result=True)
def start(key: str) -> None:
    """The pre-check's place: fan out three votes with a callback."""
    chord([vote.s(key, name) for name in ("a", "b", "c")], app=app)(done.s(key=key))


@app.task(name="floor.vote", ignore_result=True)  # as canary.detect: joined by the chord only
def vote(key: str, name: str) -> dict[str, Any]:
    """A detector's place: return a tiny result."""
    return {"detector": name, "verdict": "harmless"}


@app.task(name="floor.done", ignore_result=True)
def done(votes: list[Any], key: str) -> None:
    """The decide callback's place: stamp the time."""
    _stamps.rpush(key, repr(time.time()))
    _stamps.expire(key, 60)
