"""Batched gates: one message and one chord for many gates, every guarantee still per gate."""

from __future__ import annotations

from pathlib import Path

import pytest

from worker import detectors
from worker.core.models import ErrorKind, Report, Vote
from worker.pipeline.intake import submit_many
from worker.pipeline.ref import GateRef
from worker.pipeline.steps import detect_chunks, detect_many, votes_by_gate

PICKY = (
    "id: picky\nversion: '1'\nharm_definition: d\ninput_description: i\n"
    "precheck: {rulesets: []}\nquorum:\n  required: 2\n  detectors:\n"
    "    - {name: a, kind: static}\n    - {name: b, kind: picky}\n    - {name: c, kind: picky}\n"
)


@pytest.fixture()
def picky_policy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A policy whose detectors b and c fail on artifacts containing ``poison``."""
    monkeypatch.setitem(detectors.KINDS, "picky", "tests.fixtures.detectors:PickyDetector")
    path = tmp_path / "picky.yaml"
    path.write_text(PICKY)
    return str(path)


def run_batches(gate, items, policies, batch_size=32):
    """Submit ``items`` together through the eager task graph; returns (submitted, messages sent)."""
    sent: list[list[str]] = []

    def enqueue_batch(ids: list[str]) -> None:
        sent.append(list(ids))
        gate.app.tasks["canary.precheck"].apply_async((ids,))

    return submit_many(gate.rt, items, policies, enqueue_batch, batch_size=batch_size), sent


def test_intake_sends_new_gates_batch_size_per_message(gate, fixture_policy):
    """Five new artifacts with batch size 2 go out as messages of 2, 2 and 1; a duplicate is not resent."""
    items = [(f"f{i}", f"artifact {i}".encode()) for i in range(5)] + [("again", b"artifact 0")]
    submitted, sent = run_batches(gate, items, [fixture_policy("trivial")], batch_size=2)
    assert [len(batch) for batch in sent] == [2, 2, 1]
    assert submitted[-1].created == [False] and submitted[-1].gates[0].id == submitted[0].gates[0].id
    assert all(g.status == "allow" for s in submitted for g in s.gates)


def test_one_artifacts_detector_failure_is_an_invalid_vote_for_that_gate_only(gate, picky_policy):
    """In a batch of three, the artifact the detectors fail on goes to review; the other two are allowed."""
    items = [("ok-1", b"fine"), ("bad", b"poison pill"), ("ok-2", b"also fine")]
    submitted, sent = run_batches(gate, items, [picky_policy])
    assert len(sent) == 1 and len(sent[0]) == 3
    status = {s.source: s.gates[0].status for s in submitted}
    assert status == {"ok-1": "allow", "bad": "review", "ok-2": "allow"}
    bad = Report.model_validate_json(submitted[1].gates[0].report)
    assert sorted(str(v.error) for v in bad.votes if v.error) == ["exception", "exception"]
    allowed = sorted(p.name for p in (gate.settings.data_dir / "allowed").glob("*.json"))
    assert len(allowed) == 2


def test_mixed_policies_in_one_message_are_decided_each_under_its_own(gate, fixture_policy):
    """One message with gates of two policies: each artifact allowed only if both policies allow."""
    items = [("x", b"first"), ("y", b"second")]
    submitted, sent = run_batches(gate, items, [fixture_policy("trivial"), fixture_policy("harmful")])
    assert len(sent) == 1 and len(sent[0]) == 4
    assert [[g.status for g in s.gates] for s in submitted] == [["allow", "quarantine"]] * 2
    assert list((gate.settings.data_dir / "allowed").glob("*.json")) == []


def test_corrupt_bytes_send_that_gate_to_review_and_spare_the_batch(gate, fixture_policy):
    """A gate whose stored bytes no longer match their sha256 goes to review; its batch mates are decided."""
    from worker.pipeline.intake import store_and_register

    policy = fixture_policy("trivial")

    subs = [store_and_register(gate.rt, data, [policy], name) for name, data in (("a", b"aa"), ("b", b"bb"))]
    gate.rt.store.put(subs[1].gates[0].object_key, b"tampered")
    ids = [s.gates[0].id for s in subs]
    gate.app.tasks["canary.precheck"].apply_async((ids,))
    gates = gate.rt.repo.get_many(ids)
    assert gates[ids[0]].status == "allow"
    assert gates[ids[1]].status == "review" and "sha256" in (gates[ids[1]].reason or "")


def test_unreadable_bytes_leave_that_gate_open_for_the_sweeper(gate, fixture_policy):
    """A gate whose bytes cannot be read stays visibly running (never allowed); the rest of its batch is decided."""
    from worker.pipeline.intake import store_and_register

    policy = fixture_policy("trivial")
    subs = [
        store_and_register(gate.rt, data, [policy], name) for name, data in (("a", b"one"), ("b", b"two"))
    ]
    (gate.rt.store.root / subs[1].gates[0].object_key).unlink()
    ids = [s.gates[0].id for s in subs]
    gate.app.tasks["canary.precheck"].apply_async((ids,))
    gates = gate.rt.repo.get_many(ids)
    assert gates[ids[0]].status == "allow"
    assert gates[ids[1]].status == "running"


def test_redelivered_batch_routes_each_gate_once(gate, fixture_policy):
    """The same pre-check message delivered twice decides and publishes each gate exactly once."""
    items = [(f"r{i}", f"redelivered {i}".encode()) for i in range(3)]
    submitted, sent = run_batches(gate, items, [fixture_policy("trivial")])
    gate.app.tasks["canary.precheck"].apply_async((sent[0],))
    for sub in submitted:
        events = [e.event for e in gate.rt.repo.audit_trail(sub.gates[0].id)]
        assert events.count("allow") == 1 and events.count("published") == 1
    assert len(list((gate.settings.data_dir / "allowed").glob("*.json"))) == 3


def test_off_shape_chord_results_count_as_missing_votes(gate, fixture_policy):
    """A detector result that is not a {gate_id: vote} mapping, or names a stranger, adds no vote."""
    vote = Vote(detector="a", backend="static", verdict="harmless").model_dump(mode="json")
    results = [{"g1": vote, "stranger": vote}, ["not", "a", "mapping"], {"g1": {"garbage": True}}]
    by_gate = votes_by_gate(results, ["g1", "g2"])
    assert [v.detector for v in by_gate["g1"]] == ["a"]
    assert by_gate["g2"] == []


def test_after_the_soft_time_limit_the_rest_of_the_batch_times_out(gate, fixture_policy, monkeypatch):
    """Once the soft limit fires on one gate, later gates of the batch get timeout votes without running."""
    import worker.pipeline.steps as gate_mod
    from worker.core.detector import error_vote

    calls: list[str] = []

    def fake_detect(rt, ref, detector, policies, timeouts):
        calls.append(ref.id)
        return error_vote(detector, "static", ErrorKind.timeout, "soft time limit")

    monkeypatch.setattr(gate_mod, "detect_step", fake_detect)
    shape = {
        "policy_ref": "p",
        "policy_id": "p",
        "policy_sha256": "0",
        "sha256": "0",
        "object_key": "k",
        "size": 3,
    }
    refs = [GateRef(id=gid, **shape) for gid in ("g1", "g2", "g3")]
    votes = detect_many(gate.rt, "a", refs)
    assert calls == ["g1"]
    assert {gid: v.error for gid, v in votes.items()} == {
        gid: ErrorKind.timeout for gid in ("g1", "g2", "g3")
    }
    assert not any(v.valid for v in votes.values())


def test_batch_is_split_so_each_detector_fits_its_worst_case_in_the_soft_limit(gate, tmp_path, monkeypatch):
    """Seven gates whose detectors may take 20 s each, under a 60 s soft limit, go out as chords of 3, 3 and 1."""
    import worker.tasks.gate as tasks

    policy = tmp_path / "slowish.yaml"
    policy.write_text(
        PICKY.replace("id: picky", "id: slowish")
        .replace("kind: picky}", "kind: static, timeout_s: 20}")
        .replace("kind: static}", "kind: static, timeout_s: 20}")
    )
    sizes: list[int] = []
    real = tasks.detect_many

    def counting(rt, detector, refs, *timeouts):
        sizes.append(len(refs))
        return real(rt, detector, refs, *timeouts)

    monkeypatch.setattr(tasks, "detect_many", counting)
    assert gate.settings.soft_time_limit_s == 60
    submitted, sent = run_batches(gate, [(str(i), f"slowish {i}".encode()) for i in range(7)], [str(policy)])
    assert [len(b) for b in sent] == [7]
    assert sorted(sizes) == sorted([3, 3, 1] * 3)
    assert all(s.gates[0].status == "allow" for s in submitted)


def test_large_artifacts_get_chords_of_their_own_budget():
    """Budgets add up per chord: small gates share one, a gate whose budget fills the soft limit
    goes alone, and one whose budget exceeds it alone still goes (bounded by the limit)."""
    from worker.core.policy import HarmPolicy

    policy = HarmPolicy.model_validate(
        {
            "id": "sized",
            "version": "1",
            "harm_definition": "d",
            "input_description": "i",
            "precheck": {"rulesets": []},
            "quorum": {
                "required": 1,
                "detectors": [{"name": "a", "kind": "static", "timeout_s": 5, "timeout_per_mb_s": 10}],
            },
        }
    )
    mb = 1_000_000
    sizes = [1000, 1000, 5 * mb, 1000, 20 * mb, 1000]  # budgets ~5 s, 5 s, 55 s, 5 s, 205 s, 5 s
    assert detect_chunks(policy, sizes, soft_limit_s=60) == [(0, 2), (2, 3), (3, 4), (4, 5), (5, 6)]
    assert detect_chunks(policy, [0] * 13, soft_limit_s=60) == [(0, 12), (12, 13)]  # 12 x 5 s = 60 s
    assert detect_chunks(policy, [], soft_limit_s=60) == []
