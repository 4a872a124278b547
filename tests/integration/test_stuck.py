"""A gate whose detect messages were lost: `canary stuck` names its stage, the sweeper moves it in time."""

from __future__ import annotations

import json
import time

import pytest
import redis

from tests.integration.services import run_canary
from worker.adapters.db import GateRepo, make_engine
from worker.pipeline.intake import store_and_register
from worker.pipeline.runtime import build_runtime
from worker.settings import Settings
from worker.tasks.app import create_app

pytestmark = pytest.mark.integration


def test_lost_detect_messages_are_listed_with_their_stage_and_swept(service_env, start_worker):
    """Pre-check ran and fanned out, the detect messages vanished: stuck says "detectors 0 of 3 voted",
    the sweeper re-enqueues it and a worker decides it before its deadline."""
    start_worker(service_env)
    settings = Settings()
    rt = build_runtime(settings, role="test")
    submitted = store_and_register(rt, b"Lunch moved to 1pm on Friday.", ["prompt-injection"], source="lost")
    gate_id = submitted.gates[0].id

    # The pre-check runs here, on an app whose queue no worker serves; then its detect messages are lost.
    dead_queue = f"{settings.task_queue}.dead"
    dead = create_app(Settings(task_queue=dead_queue), eager=False)
    dead.tasks["canary.precheck"]([gate_id])
    broker = redis.Redis.from_url(settings.require_broker())
    assert broker.llen(dead_queue) == 3  # one detect per detector, waiting where nobody listens
    broker.delete(dead_queue)

    listed = run_canary(service_env, "stuck", "--older-than", "0s", "--json")
    assert listed.returncode == 1, listed.stderr
    (row,) = [json.loads(line) for line in listed.stdout.splitlines()]
    assert (row["gate_id"], row["status"], row["stage"], row["attempts"]) == (
        gate_id,
        "running",
        "detectors 0 of 3 voted",
        1,
    )
    assert row["last_actor"].startswith("worker:") and row["last_event"] == "running"

    sweep_env = {**service_env, "CANARY_REQUEUE_AFTER_S": "0.1"}
    deadline = time.monotonic() + 90
    repo = GateRepo(make_engine(settings.sqlalchemy_url))
    while (gate := repo.get(gate_id)) is not None and not gate.terminal and time.monotonic() < deadline:
        run_canary(sweep_env, "sweep")
        time.sleep(1)
    assert gate is not None and gate.status == "allow", gate
    assert gate.decided_at is not None and gate.decided_at <= gate.deadline
    events = [e.event for e in repo.audit_trail(gate_id)]
    assert "requeued" in events
    assert run_canary(service_env, "stuck", "--older-than", "0s").returncode == 0
