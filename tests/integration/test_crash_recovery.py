"""kill -9 the worker mid-run: every artifact still reaches a terminal state, none is allowed unearned."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.integration.services import run_canary
from tests.integration.test_pipeline import wait_terminal

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "policies"
pytestmark = pytest.mark.integration


def test_kill_minus_nine_mid_run_loses_nothing(service_env, start_worker, tmp_path):
    """200 artifacts, worker SIGKILLed mid-run and restarted: all 200 terminal, allow only on 2 harmless votes."""
    env = {
        **service_env,
        "CANARY_SOFT_TIME_LIMIT_S": "8",
        "CANARY_HARD_TIME_LIMIT_S": "10",
        "CANARY_VISIBILITY_TIMEOUT_S": "15",
        "CANARY_REQUEUE_AFTER_S": "30",
        "CANARY_GATE_DEADLINE_S": "600",
    }
    inputs = tmp_path / "inputs"
    inputs.mkdir()
    for i in range(200):
        (inputs / f"artifact-{i:03d}.txt").write_text(f"artifact number {i}\n")
    worker = start_worker(env, concurrency=2)
    out = run_canary(env, "submit", "--json", "--policy", str(FIXTURES / "slow-split.yaml"), str(inputs))
    assert out.returncode == 0, out.stderr
    ids = [json.loads(line)["gate_id"] for line in out.stdout.splitlines()]
    assert len(ids) == 200

    from worker.adapters.db import GateRepo, make_engine
    from worker.settings import Settings

    repo = GateRepo(make_engine(Settings().sqlalchemy_url))
    deadline = time.monotonic() + 60
    while sum(g.terminal for g in repo.get_many(ids).values()) < 20:
        assert time.monotonic() < deadline, "worker made no progress"
        time.sleep(0.05)
    worker.kill9()
    done_at_kill = sum(g.terminal for g in repo.get_many(ids).values())
    assert done_at_kill < 200, "the kill must land mid-run"

    start_worker(env, concurrency=2)
    gates, _ = wait_terminal(ids, timeout=240, sweep_env=env)
    assert len(gates) == 200
    assert {g.status for g in gates.values()} <= {"allow", "quarantine", "review"}
    for gate in gates.values():
        report = json.loads(gate.report)
        if gate.status == "allow":
            valid_harmless = {
                v["detector"]
                for v in report["votes"]
                if v["verdict"] == "harmless"
                and v["error"] is None
                and v["coverage"]["scanned_bytes"] >= v["coverage"]["total_bytes"]
            }
            assert len(valid_harmless) >= 2, gate.id
    assert sum(g.status == "allow" for g in gates.values()) > 0
