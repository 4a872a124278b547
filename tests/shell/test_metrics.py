"""Prometheus gate metrics, read from the gate database of an embedded gate."""

from __future__ import annotations

import socket
import urllib.request
from datetime import timedelta
from types import SimpleNamespace

from prometheus_client import generate_latest
from sqlalchemy import create_engine
from typer.testing import CliRunner

from worker.adapters.db import Gate, utcnow
from worker.adapters.metrics import gate_registry
from worker.cli import app
from worker.settings import Settings
from worker.tasks.exporter import connect_worker_exporter


def stuck_gate(gate, name: str, attempts: int, deadline_s: float, age_s: float = 0.0) -> Gate:
    """A gate row that never ran (as if its message was lost)."""
    row = Gate(
        sha256=name * 64,
        object_key=f"objects/{name}",
        size=1,
        policy_ref="trivial",
        policy_id="trivial",
        policy_version="1",
        policy_sha256="0" * 64,
        status="running" if attempts else "pending",
        attempts=attempts,
        deadline=utcnow() + timedelta(seconds=deadline_s),
        created_at=utcnow() - timedelta(seconds=age_s),
    )
    return gate.rt.repo.register([row], "test")[0][0]


def sample(registry, name: str, **labels: str) -> float | None:
    return registry.get_sample_value(name, labels)


def test_counts_per_status_and_decision(gate, fixture_policy):
    """Decided gates show up per status and per policy/decision."""
    gate.submit(b"one", [fixture_policy("trivial")])
    gate.submit(b"two", [fixture_policy("trivial"), fixture_policy("harmful")])
    gate.submit(b"three", [fixture_policy("malformed")])
    registry = gate_registry(gate.rt.repo.engine)
    assert sample(registry, "canary_gates", status="allow") == 2
    assert sample(registry, "canary_gates", status="quarantine") == 1
    assert sample(registry, "canary_gates", status="review") == 1
    assert sample(registry, "canary_gates", status="pending") == 0
    assert sample(registry, "canary_decisions_total", policy="trivial", decision="allow") == 2
    assert sample(registry, "canary_decisions_total", policy="harmful", decision="quarantine") == 1
    assert sample(registry, "canary_decisions_total", policy="malformed", decision="review") == 1
    assert sample(registry, "canary_gates_overdue") == 0
    assert sample(registry, "canary_gates_open_oldest_age_seconds") == 0
    assert sample(registry, "canary_gate_database_up") == 1


def test_gates_awaiting_a_person(gate, fixture_policy):
    """Review and not-yet-reviewed quarantine are counted; a reviewer's decision takes a gate off."""
    from worker.pipeline.review import resolve

    kept = gate.submit(b"bad", [fixture_policy("harmful")]).gates[0]
    gate.submit(b"worse", [fixture_policy("harmful")])
    undecided = gate.submit(b"unclear", [fixture_policy("malformed")]).gates[0]
    registry = gate_registry(gate.rt.repo.engine)
    assert sample(registry, "canary_gates_awaiting_person", queue="quarantine") == 2
    assert sample(registry, "canary_gates_awaiting_person", queue="review") == 1

    resolve(gate.rt, kept.id, "quarantine", "dave")
    resolve(gate.rt, undecided.id, "quarantine", "dave")
    assert sample(registry, "canary_gates_awaiting_person", queue="quarantine") == 1
    assert sample(registry, "canary_gates_awaiting_person", queue="review") == 0
    assert sample(registry, "canary_gates", status="quarantine") == 3


def test_overdue_and_open_gates(gate, fixture_policy):
    """An open gate past its deadline is overdue; the oldest open age and max attempts follow open gates."""
    gate.submit(b"decided", [fixture_policy("trivial")])
    stuck_gate(gate, "a", attempts=2, deadline_s=-60, age_s=120)
    stuck_gate(gate, "b", attempts=0, deadline_s=600, age_s=5)
    registry = gate_registry(gate.rt.repo.engine)
    assert sample(registry, "canary_gates_overdue") == 1
    assert sample(registry, "canary_gate_attempts_max_open") == 2
    assert 119 <= sample(registry, "canary_gates_open_oldest_age_seconds") < 600
    assert sample(registry, "canary_gates", status="running") == 1
    assert sample(registry, "canary_gates", status="pending") == 1


def test_counts_are_read_at_scrape_time(gate, fixture_policy):
    """A gate decided after the registry was built is counted on the next scrape (no process-local state)."""
    registry = gate_registry(gate.rt.repo.engine)
    assert sample(registry, "canary_gates", status="allow") == 0
    gate.submit(b"later", [fixture_policy("trivial")])
    assert sample(registry, "canary_gates", status="allow") == 1


def test_unreadable_database_reports_down(tmp_path):
    """A scrape still answers when the database cannot be read, with canary_gate_database_up 0."""
    registry = gate_registry(create_engine(f"sqlite:///{tmp_path}/missing/dir/canary.db"))
    text = generate_latest(registry).decode()
    assert "canary_gate_database_up 0.0" in text
    assert "canary_gates{" not in text


class FakeWorker:
    """Stands in for the WorkController that sends ``worker_init`` (hashable, unlike SimpleNamespace)."""

    def __init__(self, settings: Settings) -> None:
        self.app = SimpleNamespace(canary_settings=settings)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_worker_init_starts_exporter_only_with_a_port(gate, tmp_path):
    """The worker_init hook serves /metrics when metrics_port is set and does nothing when it is 0."""
    from celery.signals import worker_init

    connect_worker_exporter()
    connect_worker_exporter()  # idempotent: one receiver
    port = free_port()
    worker_init.send(sender=FakeWorker(Settings(data_dir=tmp_path / "q")))
    assert not (tmp_path / "q").exists()
    settings = gate.settings.model_copy(update={"metrics_port": port})
    try:
        worker_init.send(sender=FakeWorker(settings))
    finally:
        worker_init.disconnect(dispatch_uid="canary-metrics-exporter")
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
        body = response.read().decode()
    assert 'canary_gates{status="pending"} 0.0' in body


def test_metrics_once_prints_the_configured_database(gate, fixture_policy, monkeypatch):
    """``canary metrics --once`` prints the exposition text for CANARY_DATA_DIR's database."""
    gate.submit(b"x", [fixture_policy("harmful")])
    monkeypatch.setenv("CANARY_DATA_DIR", str(gate.settings.data_dir))
    result = CliRunner().invoke(app, ["metrics", "--once"])
    assert result.exit_code == 0, result.stderr
    assert 'canary_decisions_total{decision="quarantine",policy="harmful"} 1.0' in result.stdout, (
        result.stderr
    )


def test_metrics_bad_settings_is_a_usage_error(monkeypatch):
    """Invalid CANARY_* settings make ``canary metrics`` exit 2."""
    monkeypatch.setenv("CANARY_METRICS_PORT", "abc")
    assert CliRunner().invoke(app, ["metrics", "--once"]).exit_code == 2
