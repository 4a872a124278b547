"""The spine in-process: intake, pre-check, chord, quorum, routing and the audit trail."""

from __future__ import annotations

import gc
import json

from worker.adapters.db.engine import aware
from worker.core.models import PrecheckResult, Report
from worker.pipeline.ref import gate_snapshot, gates_from_snapshots
from worker.pipeline.steps import Pending, decide_many, decide_step, parse_votes
from worker.settings import Settings
from worker.tasks.embedded import EmbeddedGate


def test_trivial_detectors_allow_and_publish(gate, fixture_policy):
    """Three harmless votes allow the artifact and publish it to the allowed folder."""
    sub = gate.submit(b"hello", [fixture_policy("trivial")], source="t")
    g = sub.gates[0]
    assert g.status == "allow"
    msgs = list((gate.settings.data_dir / "allowed").glob("*.json"))
    assert len(msgs) == 1
    message = json.loads(msgs[0].read_text())
    assert message["gate_id"] == g.id and message["sha256"] == g.sha256
    assert gate.rt.store.get(message["object_key"]) == b"hello"


def test_harmful_quorum_quarantines_bytes_and_report(gate, fixture_policy):
    """Two harmful votes put the artifact and its report under <gate_id>/ in quarantine."""
    g = gate.submit(b"bad bytes", [fixture_policy("harmful")]).gates[0]
    assert g.status == "quarantine"
    assert gate.rt.quarantine.get(f"{g.id}/artifact") == b"bad bytes"
    report = Report.model_validate_json(gate.rt.quarantine.get(f"{g.id}/report.json"))
    assert report.decision == "quarantine" and len(report.votes) == 3


def test_malformed_detector_output_sends_to_review(gate, fixture_policy):
    """Off-protocol detector answers are invalid votes: no quorum, so review."""
    g = gate.submit(b"x", [fixture_policy("malformed")]).gates[0]
    assert g.status == "review"
    report = Report.model_validate_json(g.report)
    assert sorted(v.error for v in report.votes if v.error) == ["malformed", "malformed"]
    assert (gate.settings.data_dir / "review" / f"{g.id}.json").is_file()


def test_same_bytes_same_policy_returns_existing_gate(gate, fixture_policy):
    """Resubmitting identical bytes under the same policy returns the same gate, undecided again never."""
    first = gate.submit(b"same", [fixture_policy("trivial")]).gates[0]
    second = gate.submit(b"same", [fixture_policy("trivial")])
    assert second.gates[0].id == first.id and second.created == [False]
    events = [e.event for e in gate.rt.repo.audit_trail(first.id)]
    assert events.count("allow") == 1


def test_allowed_only_if_every_policy_allows(gate, fixture_policy):
    """Under two policies, one quarantine means nothing is published to allowed."""
    sub = gate.submit(b"two lenses", [fixture_policy("trivial"), fixture_policy("harmful")])
    assert [g.status for g in sub.gates] == ["allow", "quarantine"]
    assert list((gate.settings.data_dir / "allowed").glob("*.json")) == []


def test_redelivered_decide_routes_once(gate, fixture_policy):
    """A second decide for a decided gate changes nothing and publishes nothing new."""
    g = gate.submit(b"once", [fixture_policy("trivial")]).gates[0]
    votes = parse_votes(json.loads(g.report)["votes"])
    again = decide_step(gate.rt, g.id, PrecheckResult(verdict="harmless"), votes)
    assert again is None
    assert len(list((gate.settings.data_dir / "allowed").glob("*.json"))) == 1
    assert [e.event for e in gate.rt.repo.audit_trail(g.id)].count("allow") == 1


def test_detector_exception_and_timeout_are_invalid_votes(gate, tmp_path):
    """A raising detector and a too-slow one become invalid votes, so the item goes to review."""
    policy = tmp_path / "flaky.yaml"
    policy.write_text(
        "id: flaky\nversion: '1'\nharm_definition: d\ninput_description: i\n"
        "precheck: {rulesets: []}\nquorum:\n  required: 2\n  detectors:\n"
        "    - {name: ok, kind: static}\n"
        "    - {name: boom, kind: static, options: {fail: broken}}\n"
        "    - {name: slow, kind: static, timeout_s: 0.01, options: {delay_s: 0.05}}\n"
    )
    g = gate.submit(b"flaky", [str(policy)]).gates[0]
    assert g.status == "review"
    errors = {v.detector: v.error for v in Report.model_validate_json(g.report).votes}
    assert errors == {"ok": None, "boom": "exception", "slow": "timeout"}


def test_a_detectors_budget_grows_with_the_artifact(gate, tmp_path):
    """With ``timeout_per_mb_s``, the same slow answer is a timeout on a small artifact and a
    valid vote on a large one (local detectors read every byte: their time grows with size)."""
    policy = tmp_path / "sized.yaml"
    policy.write_text(
        "id: sized\nversion: '1'\nharm_definition: d\ninput_description: i\n"
        "precheck: {rulesets: []}\nquorum:\n  required: 2\n  detectors:\n"
        "    - {name: a, kind: static}\n    - {name: b, kind: static}\n"
        "    - {name: slow, kind: static, timeout_s: 0.01, timeout_per_mb_s: 0.1, options: {delay_s: 0.05}}\n"
    )
    small = Report.model_validate_json(gate.submit(b"s" * 1000, [str(policy)]).gates[0].report)
    large = Report.model_validate_json(gate.submit(b"l" * 1_000_000, [str(policy)]).gates[0].report)
    assert {v.detector: v.error for v in small.votes}["slow"] == "timeout"
    assert {v.detector: (v.error, v.verdict) for v in large.votes}["slow"] == (None, "harmless")
    assert large.decision == "allow"


def test_a_policy_edited_while_gates_wait(gate, tmp_path):
    """A gate submitted before its policy file was edited goes to review (it was submitted
    under other rules); the next submission runs under the edited file in the same process,
    with no restart."""
    from worker.pipeline.intake import store_and_register

    policy = tmp_path / "edited.yaml"
    harmless, harmful = '{"verdict": "harmless"}', '{"verdict": "harmful"}'

    def write(version: str, output: str) -> None:
        detectors = "".join(
            f"    - {{name: {n}, kind: static, options: {{output: '{output}'}}}}\n" for n in "abc"
        )
        policy.write_text(
            f"id: edited\nversion: '{version}'\nharm_definition: d\ninput_description: i\n"
            f"precheck: {{rulesets: []}}\nquorum:\n  required: 2\n  detectors:\n{detectors}"
        )

    write("1", harmless)
    waiting = store_and_register(gate.rt, b"submitted before the edit", [str(policy)]).gates[0]
    write("2", harmful)
    gate.run(waiting.id)
    waited = gate.rt.repo.get(waiting.id)
    assert waited is not None and waited.status == "review"
    assert "changed since submission" in Report.model_validate_json(waited.report).reason
    after = gate.submit(b"submitted after the edit", [str(policy)]).gates[0]
    assert (after.status, after.policy_version) == ("quarantine", "2")


def test_partial_coverage_detector_cannot_allow(gate, tmp_path):
    """Harmless votes that skipped part of the artifact do not allow it."""
    policy = tmp_path / "partial.yaml"
    policy.write_text(
        "id: partial\nversion: '1'\nharm_definition: d\ninput_description: i\n"
        "precheck: {rulesets: []}\nquorum:\n  required: 2\n  detectors:\n"
        "    - {name: a, kind: static, options: {coverage: 0.5}}\n"
        "    - {name: b, kind: static, options: {coverage: 0.99}}\n"
        "    - {name: c, kind: static}\n"
    )
    g = gate.submit(b"x" * 1000, [str(policy)]).gates[0]
    assert g.status == "review"
    assert {v.error for v in Report.model_validate_json(g.report).votes} == {"partial_coverage", None}


def test_every_transition_is_audited(gate, fixture_policy):
    """The audit trail records submission, the run and the decision with their actors."""
    g = gate.submit(b"audit me", [fixture_policy("trivial")]).gates[0]
    trail = gate.rt.repo.audit_trail(g.id)
    assert [e.event for e in trail][:3] == ["submitted", "running", "allow"]
    assert all(e.actor for e in trail)


def test_report_records_coverage_and_policy_fingerprint(gate, fixture_policy):
    """The report says what was covered and which policy file decided."""
    g = gate.submit(b"x" * 5000, [fixture_policy("trivial")]).gates[0]
    report = Report.model_validate_json(g.report)
    assert report.coverage.total_bytes == 5000 and report.coverage.complete
    assert report.policy.id == "trivial" and len(report.policy.sha256) == 64


def test_the_python_api_prints_nothing(tmp_path):
    """``scan()`` used as a library writes no log line to stdout or stderr (events go to stdlib
    logging, quiet at its default level), and still returns the report."""
    import os
    import subprocess
    import sys

    code = "from worker.api import scan; print(scan('Lunch moved to 1pm.').decision)"
    env = {**os.environ, "CANARY_DATA_DIR": str(tmp_path / "data")}
    for var in ("CANARY_BROKER_URL", "CANARY_DATABASE_URL", "CANARY_S3_ENDPOINT_URL"):
        env.pop(var, None)
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert (done.stdout, done.stderr) == ("allow\n", "")


def test_each_gate_gets_its_own_runtime_even_when_an_old_app_is_gone(tmp_path):
    """A runtime belongs to its app. Keyed by ``id(app)``, a new app could be handed the runtime of a
    collected one that had the same address: its database and folders, so an allowed artifact was
    published into another gate's folder (a flaky review test showed it)."""
    for index in range(40):
        folder = tmp_path / f"gate{index}"
        gate = EmbeddedGate(Settings(data_dir=folder))
        assert gate.rt.settings.data_dir == folder
        del gate
        gc.collect()


def test_a_redelivered_decide_carrying_the_started_row_records_nothing_again(gate, fixture_policy):
    """A decide whose message carries the gate's row as started still records and publishes once."""
    g = gate.submit(b"twice", [fixture_policy("trivial")]).gates[0]
    votes = parse_votes(json.loads(g.report)["votes"])
    known = gates_from_snapshots({g.id: gate_snapshot(g)})
    assert decide_many(gate.rt, {g.id: Pending(PrecheckResult(verdict="harmless"), votes)}, known) == {}
    assert len(list((gate.settings.data_dir / "allowed").glob("*.json"))) == 1
    assert [e.event for e in gate.rt.repo.audit_trail(g.id)].count("allow") == 1


def test_gate_snapshots_keep_the_unchanging_columns_and_drop_what_is_off_shape(gate, fixture_policy):
    """A snapshot comes back with the row's unchanging columns; a mismatched or broken entry is left out."""
    g = gate.submit(b"snap", [fixture_policy("trivial")]).gates[0]
    snap = gate_snapshot(g)
    back = gates_from_snapshots({g.id: snap, "other": snap, "broken": {"id": "broken"}, "odd": 3})
    assert list(back) == [g.id] and back[g.id].status == "running"
    columns = ("sha256", "object_key", "size", "policy_ref", "policy_id", "policy_version", "policy_sha256")
    assert all(getattr(back[g.id], c) == getattr(g, c) for c in columns)
    assert back[g.id].created_at == aware(g.created_at) and gates_from_snapshots(None) == {}


def _running_with_votes(gate, policy: str, data: bytes) -> tuple[str, list[dict]]:
    """A started gate (its message taken) and three harmless votes for it, as a chord delivers them."""
    from worker.pipeline.intake import submit_artifact

    gid = submit_artifact(gate.rt, data, [policy], enqueue=lambda _gid: None).gates[0].id
    gate.rt.repo.start_many([gid], "test", claim="message-1")
    vote = {"backend": "static", "verdict": "harmless", "coverage": {"total_bytes": 4, "scanned_bytes": 4}}
    return gid, [{gid: {**vote, "detector": name}} for name in "abc"]


def test_a_decide_whose_context_cannot_be_read_sends_its_gate_to_review(gate, fixture_policy):
    """A decide message with a broken pre-check context reviews the gate despite three harmless votes."""
    for i, context in enumerate(("{not json", "[]", '{"prechecks": {"other": {"verdict": "harmless"}}}')):
        gid, votes = _running_with_votes(gate, fixture_policy("trivial"), f"broken {i}".encode())
        gate.app.tasks["canary.decide"].apply((votes, [gid]), {"context": context})
        decided = gate.rt.repo.get(gid)
        assert (decided.status, decided.reason) == ("review", "pre-check result missing"), context


def test_a_decide_with_its_context_allows_as_the_separate_arguments_did(gate, fixture_policy):
    """The context text and the older separate arguments decide the same gate the same way."""
    for i, as_text in enumerate((True, False)):
        gid, votes = _running_with_votes(gate, fixture_policy("trivial"), f"fine {i}".encode())
        prechecks = {gid: {"verdict": "harmless"}}
        kwargs = {"context": json.dumps({"prechecks": prechecks})} if as_text else {"prechecks": prechecks}
        gate.app.tasks["canary.decide"].apply((votes, [gid]), kwargs)
        assert gate.rt.repo.get(gid).status == "allow", kwargs


def test_gate_steps_read_the_bytes_given_not_a_copy_from_the_store(gate, fixture_policy):
    """An embedded scan holds its input once: no step reads the artifact back from the store."""
    reads: list[str] = []
    store_get = gate.rt.store.get
    gate.rt.store.get = lambda key: reads.append(key) or store_get(key)  # type: ignore[method-assign]
    data = b"a big input " * 1000
    sub = gate.submit(data, [fixture_policy("trivial"), fixture_policy("harmful")])
    assert [g.status for g in sub.gates] == ["allow", "quarantine"]
    assert reads == []
    assert gate.rt.reader.get(sub.gates[0].object_key) == data  # after the scan: from the store again
    assert reads == [sub.gates[0].object_key]
