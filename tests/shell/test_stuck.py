"""`canary stuck` on the embedded default: stages, thresholds, --to-review and --requeue audited."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from worker.adapters.db import GateStatus
from worker.cli import app
from worker.pipeline.intake import store_and_register
from worker.pipeline.runtime import build_runtime
from worker.pipeline.stuck import _stage, parse_duration
from worker.settings import Settings


@pytest.fixture()
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Settings:
    monkeypatch.setenv("CANARY_DATA_DIR", str(tmp_path / "data"))
    for var in ("CANARY_BROKER_URL", "CANARY_DATABASE_URL", "CANARY_S3_ENDPOINT_URL"):
        monkeypatch.delenv(var, raising=False)
    return Settings()


def pending_gate(settings: Settings, text: bytes = b"Lunch moved to 1pm.") -> str:
    """A gate registered but never enqueued: its pre-check message was lost."""
    rt = build_runtime(settings, role="test")
    return store_and_register(rt, text, ["prompt-injection"]).gates[0].id


def test_a_gate_whose_message_was_lost_is_listed_waiting_for_pre_check(env: Settings) -> None:
    """A pending gate past the threshold is listed with its stage, attempts and last actor; exit 1."""
    gate_id = pending_gate(env)
    result = CliRunner().invoke(app, ["stuck", "--older-than", "0s", "--json"])
    assert result.exit_code == 1, result.output
    row = json.loads(result.stdout)
    assert (row["gate_id"], row["stage"], row["attempts"], row["last_event"]) == (
        gate_id,
        "waiting for pre-check",
        0,
        "submitted",
    )


def test_a_fresh_gate_is_not_stuck(env: Settings) -> None:
    """Below the threshold nothing is listed and the exit code is 0."""
    pending_gate(env)
    result = CliRunner().invoke(app, ["stuck", "--older-than", "10m"])
    assert result.exit_code == 0 and result.stdout == ""


def test_to_review_moves_stuck_gates_and_audits_the_operator(env: Settings) -> None:
    """--to-review sends the stuck gate to review with the operator named in the reason and the audit."""
    gate_id = pending_gate(env)
    result = CliRunner().invoke(app, ["stuck", "--older-than", "0s", "--to-review", "--by", "ops-ann"])
    assert result.exit_code == 1
    rt = build_runtime(env, role="test")
    gate = rt.repo.get(gate_id)
    assert gate is not None and gate.status == "review" and "ops-ann" in (gate.reason or "")
    trail = [(e.event, e.actor) for e in rt.repo.audit_trail(gate_id)]
    assert ("operator:to-review", "operator:ops-ann") in trail
    assert CliRunner().invoke(app, ["stuck", "--older-than", "0s"]).exit_code == 0


def test_requeue_runs_the_gate_again_and_audits_it(env: Settings) -> None:
    """--requeue re-enqueues the gate (in-process with the embedded default): it is decided, and audited."""
    gate_id = pending_gate(env)
    result = CliRunner().invoke(app, ["stuck", "--older-than", "0s", "--requeue", "--by", "ops-bo"])
    assert result.exit_code == 1
    rt = build_runtime(env, role="test")
    gate = rt.repo.get(gate_id)
    assert gate is not None and gate.status == "allow"
    assert ("requeued", "operator:ops-bo") in [(e.event, e.actor) for e in rt.repo.audit_trail(gate_id)]


def test_stages_from_the_fan_out_ledger() -> None:
    """running + ledger: in pre-check, detectors k of n voted, callback not run."""

    class G:
        status = GateStatus.running

    gate = G()
    assert _stage(gate, {}, False) == "in pre-check"  # type: ignore[arg-type]
    ledger = {"_expected": "rules,lexical,semantic", "v:rules": "harmless"}
    assert _stage(gate, ledger, False) == "detectors 1 of 3 voted"  # type: ignore[arg-type]
    ledger |= {"v:lexical": "harmless", "v:semantic": "invalid:timeout"}
    assert _stage(gate, ledger, False) == "callback not run"  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "seconds"), [("90s", 90), ("10m", 600), ("2h", 7200), ("1d", 86400), ("45", 45), ("0.5m", 30)]
)
def test_durations(text: str, seconds: float) -> None:
    """--older-than reads s, m, h, d, or bare seconds."""
    assert parse_duration(text) == seconds


def test_a_bad_duration_is_a_usage_error(env: Settings) -> None:
    """--older-than ten is refused with exit 2 and an example."""
    result = CliRunner().invoke(app, ["stuck", "--older-than", "ten"])
    assert result.exit_code == 2 and "10m" in result.stderr
