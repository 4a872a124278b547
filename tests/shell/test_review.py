"""Human review: a person's decision is audited, routed, and published only when every policy allows."""

from __future__ import annotations

import json

import pytest

from worker.review import ReviewError, resolve, waiting


def test_reviewer_allow_publishes_and_audits(gate, fixture_policy):
    """Allowing a reviewed gate publishes it and records the person in the audit trail."""
    g = gate.submit(b"needs a human", [fixture_policy("malformed")]).gates[0]
    assert [w.id for w in waiting(gate.rt)] == [g.id]
    done = resolve(gate.rt, g.id, "allow", "alice", "checked by hand")
    assert done.status == "allow" and json.loads(done.report)["review"]["by"] == "alice"
    msgs = list((gate.settings.data_dir / "allowed").glob("*.json"))
    assert len(msgs) == 1 and json.loads(msgs[0].read_text())["gate_id"] == g.id
    trail = gate.rt.repo.audit_trail(g.id)
    assert (trail[-2].event, trail[-2].actor) == ("reviewed:allow", "person:alice")


def test_reviewer_quarantine_moves_bytes_to_quarantine(gate, fixture_policy):
    """Quarantining a reviewed gate stores the bytes and report under <gate_id>/."""
    g = gate.submit(b"suspicious", [fixture_policy("malformed")]).gates[0]
    resolve(gate.rt, g.id, "quarantine", "bob")
    assert gate.rt.quarantine.get(f"{g.id}/artifact") == b"suspicious"
    assert list((gate.settings.data_dir / "allowed").glob("*.json")) == []


def test_only_gates_in_review_can_be_resolved(gate, fixture_policy):
    """A reviewer cannot overturn an automatic quarantine or allow."""
    g = gate.submit(b"bad", [fixture_policy("harmful")]).gates[0]
    with pytest.raises(ReviewError):
        resolve(gate.rt, g.id, "allow", "mallory")


def test_human_allow_under_one_policy_waits_for_the_others(gate, fixture_policy):
    """An artifact quarantined under another policy is still not published after a human allow."""
    sub = gate.submit(b"two lenses", [fixture_policy("malformed"), fixture_policy("harmful")])
    resolve(gate.rt, sub.gates[0].id, "allow", "carol")
    assert list((gate.settings.data_dir / "allowed").glob("*.json")) == []
