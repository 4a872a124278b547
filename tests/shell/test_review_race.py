"""Two reviewers deciding one gate at once: the database picks the winner, the bucket follows it."""

from __future__ import annotations

import json

import pytest

from worker.pipeline.review import ReviewError, resolve
from worker.tasks.embedded import EmbeddedGate


def test_the_loser_of_a_review_race_leaves_the_bucket_alone(gate, fixture_policy, monkeypatch):
    """Ann and Bo both read the gate in review; Bo's quarantine lands first. Ann is refused, and the
    quarantine bucket's report.json names Bo, as the database does (it named Ann before the fix)."""
    g = gate.submit(b"two reviewers look at this", [fixture_policy("malformed")]).gates[0]
    ann = EmbeddedGate(gate.settings).rt  # each reviewer runs `canary review decide` in a process of its own
    bo = EmbeddedGate(gate.settings).rt
    real_get = ann.repo.get
    raced = []

    def get_then_lose_the_race(gate_id: str):
        found = real_get(gate_id)  # Ann has read the gate (still in review) ...
        if not raced:
            raced.append(resolve(bo, gate_id, "quarantine", "bo", "first"))  # ... and Bo decides now
        return found

    monkeypatch.setattr(ann.repo, "get", get_then_lose_the_race)
    with pytest.raises(ReviewError, match="meanwhile"):
        resolve(ann, g.id, "quarantine", "ann", "second")
    stored = json.loads(bo.quarantine.get(f"{g.id}/report.json"))
    recorded = json.loads(bo.repo.get(g.id).report)
    assert stored["review"]["by"] == recorded["review"]["by"] == "bo"


def test_the_loser_releasing_writes_nothing_either(gate, fixture_policy, monkeypatch):
    """Bo allows the gate in review while Ann quarantines it: Ann is refused and no quarantine
    record exists for a gate the database allowed."""
    g = gate.submit(b"allowed by the winner", [fixture_policy("malformed")]).gates[0]
    ann, bo = EmbeddedGate(gate.settings).rt, EmbeddedGate(gate.settings).rt
    real_get = ann.repo.get
    raced = []

    def get_then_lose_the_race(gate_id: str):
        found = real_get(gate_id)
        if not raced:
            raced.append(resolve(bo, gate_id, "allow", "bo", "fine"))
        return found

    monkeypatch.setattr(ann.repo, "get", get_then_lose_the_race)
    with pytest.raises(ReviewError, match="meanwhile"):
        resolve(ann, g.id, "quarantine", "ann")
    assert bo.repo.get(g.id).status == "allow"
    assert not bo.quarantine.exists(f"{g.id}/report.json")
    assert not bo.quarantine.exists(f"{g.id}/artifact")
