"""A `canary worker` writing to a file logs valid JSON lines, Celery's own lines included."""

from __future__ import annotations

import json
import time

import pytest

from worker.adapters.db import GateRepo, make_engine
from worker.pipeline.intake import store_and_register
from worker.pipeline.runtime import build_runtime
from worker.settings import Settings
from worker.tasks.app import create_app

pytestmark = pytest.mark.integration


def test_every_worker_log_line_is_a_json_object(service_env, start_worker):
    """Start-up, task and decision lines all parse as JSON objects with event, level and timestamp."""
    worker = start_worker(service_env)
    settings = Settings()
    rt = build_runtime(settings, role="test")
    gate_id = store_and_register(rt, b"Lunch moved to 1pm.", ["prompt-injection"]).gates[0].id
    create_app(settings, eager=False).send_task("canary.precheck", (gate_id,), ignore_result=True)
    repo = GateRepo(make_engine(settings.sqlalchemy_url))
    deadline = time.monotonic() + 90
    while not (gate := repo.get(gate_id)) or not gate.terminal:
        assert time.monotonic() < deadline, "gate not decided"
        time.sleep(0.3)
    time.sleep(1)  # the decision's log line is written after the commit
    lines = [line for line in worker.log.read_text().splitlines() if line.strip()]
    parsed = [json.loads(line) for line in lines]
    assert all(isinstance(p, dict) and {"event", "level", "timestamp"} <= set(p) for p in parsed)
    assert any(p["event"] == "gate_decided" and p.get("gate_id") == gate_id for p in parsed)
    assert any("ready." in str(p["event"]) for p in parsed)
