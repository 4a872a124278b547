"""Intake on Postgres: new gates in one statement, existing ones through the transaction."""

from __future__ import annotations

import hashlib
import json
import uuid
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import event, text

from tests.integration.services import check_postgres, database_url, require

pytestmark = pytest.mark.integration
FIXTURE_POLICY = Path(__file__).resolve().parents[1] / "fixtures" / "policies" / "trivial.yaml"


@pytest.fixture()
def repo():
    """A gate repository on the test database."""
    from worker.adapters.db import GateRepo, make_engine

    url = database_url()
    require(check_postgres(url) is None, f"postgres: {check_postgres(url)}")
    repo = GateRepo(make_engine(url))
    yield repo
    repo.engine.dispose()


def gate_for(sha256: str, policy: str):
    """A fresh gate row of ``sha256`` under ``policy``."""
    from worker.adapters.db import Gate, utcnow

    return Gate(
        sha256=sha256,
        object_key=f"sha256/{sha256}",
        size=3,
        policy_ref=policy,
        policy_id=policy,
        policy_version="2",
        policy_sha256=hashlib.sha256(policy.encode()).hexdigest(),
        deadline=utcnow() + timedelta(seconds=60),
    )


def stored_submission(repo, submission_id: str) -> list[str]:
    """The gate ids a stored submission lists."""
    with repo.engine.connect() as conn:
        raw = conn.execute(text("SELECT gate_ids FROM submissions WHERE id = :id"), {"id": submission_id})
        return list(json.loads(raw.scalar_one()))


def test_new_gates_are_registered_in_one_statement_with_audit_and_submission(repo):
    """Two new gates: one statement writes both, their audit rows and the submission."""
    sha = hashlib.sha256(uuid.uuid4().bytes).hexdigest()
    statements: list[str] = []
    event.listen(repo.engine, "before_cursor_execute", lambda *a: statements.append(a[2]))
    gates, created, sub = repo.register([gate_for(sha, "a"), gate_for(sha, "b")], "producer:t")
    assert created == [True, True] and len(statements) == 1
    stored = repo.get_many(g.id for g in gates)
    assert {g.policy_id for g in stored.values()} == {"a", "b"} and all(
        g.status == "pending" for g in stored.values()
    )
    for gate in gates:
        trail = repo.audit_trail(gate.id)
        assert [(e.event, e.actor, e.detail) for e in trail] == [
            ("submitted", "producer:t", f"policy={gate.policy_id}@2")
        ]
    assert stored_submission(repo, sub.id) == [g.id for g in gates]


def test_an_existing_gate_is_returned_and_the_new_one_audited_once(repo):
    """The same bytes again under an old and a new policy: the old gate comes back, one new gate and one submission more."""
    sha = hashlib.sha256(uuid.uuid4().bytes).hexdigest()
    (first,), _, _ = repo.register([gate_for(sha, "a")], "producer:t")
    gates, created, sub = repo.register([gate_for(sha, "a"), gate_for(sha, "c")], "producer:t")
    assert created == [False, True] and gates[0].id == first.id
    assert stored_submission(repo, sub.id) == [first.id, gates[1].id]
    assert [e.event for e in repo.audit_trail(first.id)] == ["submitted"]
    assert [e.event for e in repo.audit_trail(gates[1].id)] == ["submitted"]


def test_a_lone_intake_sends_its_message_before_waiting_for_the_disk(tmp_path):
    """A lone submit: its rows are visible when its message goes out, and durable (a synchronous
    commit after the message) when ``submit_artifact`` returns; the disk flush is not waited on
    before the message."""
    from worker.pipeline.intake import submit_artifact
    from worker.pipeline.runtime import build_runtime
    from worker.settings import Settings

    url = database_url()
    require(check_postgres(url) is None, f"postgres: {check_postgres(url)}")
    settings = Settings(database_url=url, data_dir=tmp_path, object_store="local", stage_metrics=False)
    rt = build_runtime(settings, role="test")
    seen: list[str] = []
    for name, engine in (("durable", rt.repo.engine), ("async", rt.repo.autocommit_engine)):
        event.listen(
            engine, "before_cursor_execute", lambda *a, name=name: seen.append(f"{name}: {a[2].split()[0]}")
        )

    def enqueue(gate_id: str) -> None:
        seen.append("message")
        assert rt.repo.get(gate_id) is not None  # visible to the worker that takes the message

    submitted = submit_artifact(rt, uuid.uuid4().bytes, [str(FIXTURE_POLICY)], enqueue)
    writes = [s for s in seen if "SELECT" not in s]
    assert writes[:3] == ["async: WITH", "message", "durable: UPDATE"], seen
    assert rt.repo.get(submitted.gates[0].id).status == "pending"
    rt.repo.engine.dispose()
    rt.repo.autocommit_engine.dispose()


def test_starting_a_gate_on_postgres_returns_it_as_read_and_keeps_the_claim_rule(repo):
    """The one-statement claim hands back the row as a read would (enum status, aware times), and
    a gate held by another live message is left out; its own message takes it again."""
    from worker.adapters.db import GateStatus

    sha = hashlib.sha256(uuid.uuid4().bytes).hexdigest()
    (gate,), _, _ = repo.register([gate_for(sha, "a")], "producer:t")
    (started,) = repo.start_many([gate.id], "worker:t", claim="message-1")
    read = repo.get_many([gate.id])[gate.id]
    assert started.model_dump() == read.model_dump()
    assert started.status is GateStatus.running and started.attempts == 1 and started.claim == "message-1"
    assert started.deadline.tzinfo is not None and not started.terminal
    assert repo.start_many([gate.id], "worker:t", claim="message-2") == []  # another live message
    (again,) = repo.start_many([gate.id], "worker:t", claim="message-1")  # its own, delivered again
    assert again.attempts == 2
    assert [e.detail for e in repo.audit_trail(gate.id)][1:] == ["attempt=1", "attempt=2"]
