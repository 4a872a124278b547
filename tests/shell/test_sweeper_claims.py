"""The sweeper under backlog: a queued gate is not re-sent, an attempt counts only once the previous one is dead."""

from __future__ import annotations

from datetime import timedelta

import pytest

from worker.adapters.broker import gate_ids_in, sweep_lock
from worker.adapters.db import utcnow
from worker.pipeline import sweeper
from worker.pipeline.intake import submit_artifact


def _pending(gate, policy: str, data: bytes) -> str:
    """A gate registered but never run (its message would be queued or lost)."""
    submitted = submit_artifact(gate.rt, data, [policy], enqueue=lambda _gid: None)
    return submitted.gates[0].id


def _age(gate, gate_id: str, seconds: float) -> None:
    from sqlalchemy import text

    with gate.rt.repo.engine.begin() as conn:
        conn.execute(
            text("UPDATE gates SET updated_at = :at WHERE id = :id"),
            {"at": utcnow() - timedelta(seconds=seconds), "id": gate_id},
        )


def test_a_message_delivered_twice_counts_one_attempt_while_its_first_copy_lives(gate, fixture_policy):
    """A second message for a gate another message holds starts nothing and counts nothing."""
    gid = _pending(gate, fixture_policy("trivial"), b"claimed once")
    repo = gate.rt.repo
    assert [g.attempts for g in repo.start_many([gid], "w1", claim="message-1")] == [1]
    assert repo.start_many([gid], "w2", claim="message-2") == []
    assert repo.get(gid).attempts == 1


def test_the_same_message_delivered_again_counts_a_new_attempt(gate, fixture_policy):
    """A redelivery of the claiming message (its worker died) takes the gate and counts."""
    gid = _pending(gate, fixture_policy("trivial"), b"redelivered")
    repo = gate.rt.repo
    repo.start_many([gid], "w1", claim="message-1")
    assert [g.attempts for g in repo.start_many([gid], "w2", claim="message-1")] == [2]


def test_a_gate_the_sweeper_resends_is_taken_by_the_new_message(gate, fixture_policy):
    """Re-sending releases the claim: the sweeper's message starts the gate as a new attempt."""
    gid = _pending(gate, fixture_policy("trivial"), b"lost message")
    repo = gate.rt.repo
    repo.start_many([gid], "w1", claim="message-1")
    repo.touch_requeued(gid, "sweeper", "lost")
    assert [g.attempts for g in repo.start_many([gid], "w2", claim="message-2")] == [2]


def test_the_sweeper_leaves_a_queued_gate_alone_however_long_it_waits(gate, fixture_policy, monkeypatch):
    """A gate whose message is still in the broker is not re-sent (a backlog is not a loss)."""
    queued = _pending(gate, fixture_policy("trivial"), b"waiting in the queue")
    lost = _pending(gate, fixture_policy("trivial"), b"message vanished")
    for gid in (queued, lost):
        _age(gate, gid, gate.settings.requeue_after_s + 60)
    monkeypatch.setattr(sweeper, "queued_gate_ids", lambda _url, _queues, _timeout: {queued})
    sent: list[str] = []
    counts = sweeper.sweep(gate.rt, sent.append)
    assert sent == [lost]
    assert counts["requeued"] == 1 and counts["still_queued"] == 1
    assert gate.rt.repo.get(queued).status == "pending"


def test_a_queued_gate_at_its_attempt_limit_is_not_given_up(gate, fixture_policy, monkeypatch):
    """An attempt still queued is alive: the sweeper does not send its gate to review for attempts."""
    gid = _pending(gate, fixture_policy("trivial"), b"last attempt still queued")
    for _ in range(gate.settings.max_attempts):
        gate.rt.repo.start_many([gid], "w", claim="message-1")
    _age(gate, gid, gate.settings.requeue_after_s + 60)
    monkeypatch.setattr(sweeper, "queued_gate_ids", lambda _url, _queues, _timeout: {gid})
    sweeper.sweep(gate.rt, lambda _gid: None)
    assert gate.rt.repo.get(gid).status == "running"


def test_sweeps_do_not_overlap(gate, fixture_policy):
    """A sweep that starts while another holds the lock does nothing and says so."""
    gid = _pending(gate, fixture_policy("trivial"), b"only one sweeper")
    _age(gate, gid, gate.settings.requeue_after_s + 60)
    sent: list[str] = []
    with sweep_lock(None, gate.settings.data_dir, 60) as held:
        assert held
        counts = sweeper.sweep(gate.rt, sent.append)
    assert counts["skipped"] == 1 and sent == []
    assert sweeper.sweep(gate.rt, sent.append)["requeued"] == 1


def test_gate_ids_are_read_from_a_stored_message_body():
    """The broker probe finds a gate id inside a kombu message's base64 body, not a sha256."""
    import base64
    import json

    gid, sha = "0123456789abcdef0123456789abcdef", "ab" * 32
    body = base64.b64encode(json.dumps([[[gid]], {}, {}]).encode()).decode()
    raw = json.dumps({"body": body, "headers": {"argsrepr": "(...)", "sha": sha}}).encode()
    assert gate_ids_in(raw) == {gid}
    assert gate_ids_in(json.dumps([json.loads(raw), "", "q"]).encode()) == {gid}


@pytest.mark.parametrize("task", ["canary.precheck", "canary.detect", "canary.decide"])
def test_every_gate_step_retries_storage_errors(gate, task):
    """Pre-check, each detector and the decide all retry a storage error (none becomes a vote)."""
    from worker.core.errors import StorageError

    assert StorageError in gate.app.tasks[task].autoretry_for


def test_a_storage_error_inside_a_detector_is_raised_not_voted(gate, fixture_policy):
    """The detector step raises a storage error (so its task retries) instead of casting an invalid vote."""
    from worker.core.errors import StorageError
    from worker.pipeline.ref import GateRef
    from worker.pipeline.steps import detect_many

    submitted = submit_artifact(
        gate.rt, b"store blinks", [fixture_policy("trivial")], enqueue=lambda _gid: None
    )
    ref = GateRef.of(submitted.gates[0])

    class Down:
        def get(self, key: str) -> bytes:
            raise StorageError(f"cannot get {key}: EndpointConnectionError")

    gate.rt.reader = Down()  # type: ignore[assignment]
    with pytest.raises(StorageError):
        detect_many(gate.rt, "a", [ref])
