"""``canary eval``: labelled records through the full embedded gate, scored per detector setup."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from policies.loader import load_policy
from worker.cli import app
from worker.evaluation.inputs import resolve_setup

# Detector a always answers harmful, b harmless, c off-protocol (an invalid vote).
SPLIT_POLICY = """\
id: split
version: "7"
harm_definition: test policy whose detectors disagree
input_description: anything
precheck: {rulesets: []}
quorum:
  required: 2
  detectors:
    - {name: a, kind: static, options: {output: '{"verdict": "harmful"}'}}
    - {name: b, kind: static}
    - {name: c, kind: static, options: {output: "nope"}}
"""
RECORDS = [
    {"id": "bad-1", "text": "first bad one", "label": "harmful", "source": "alpha:x:1"},
    {"id": "bad-2", "text": "second bad one", "label": "harmful", "source": "alpha:y"},
    {"id": "bad-3", "text": "third bad one", "label": "harmful", "source": "beta:z", "policy": "split"},
    {"id": "ok-1", "text": "a fine note", "label": "harmless", "source": "beta:q"},
    {"id": "ok-2", "text": "another fine note", "label": "harmless", "source": "gamma"},
    {"id": "elsewhere", "text": "for another policy", "label": "harmless", "policy": "other"},
]
KEYS = {
    "setup",
    "n",
    "fn",
    "fp",
    "fnr",
    "fpr",
    "accuracy",
    "review",
    "tokens",
    "cost_usd",
    "p50_ms",
    "p95_ms",
}


@pytest.fixture()
def policy(tmp_path: Path) -> str:
    """The disagreeing test policy as a YAML file."""
    path = tmp_path / "split.yaml"
    path.write_text(SPLIT_POLICY)
    return str(path)


@pytest.fixture()
def data(tmp_path: Path) -> str:
    """The labelled records as a gzipped JSONL file."""
    path = tmp_path / "records.jsonl.gz"
    with gzip.open(path, "wt") as fh:
        fh.writelines(json.dumps(r) + "\n" for r in RECORDS)
    return str(path)


@pytest.fixture()
def run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Invoke ``canary`` with the user's data dir pointed at a folder eval must never create."""
    monkeypatch.setenv("CANARY_DATA_DIR", str(tmp_path / "user-canary"))
    return lambda *args: CliRunner().invoke(app, ["eval", *args])


def rows(result) -> dict[str, dict]:
    return {row["setup"]: row for row in map(json.loads, result.stdout.splitlines())}


def test_counts_per_setup_and_review_counts_as_blocked(run, policy, data):
    """Single-detector setups allow or block everything; a split pair sends all to review (= blocked)."""
    result = run("--policy", policy, "-d", "b", "-d", "a", "-d", "a,b", "--json", data)
    assert result.exit_code == 0, result.stderr
    got = rows(result)
    assert (got["b"]["fn"], got["b"]["fp"], got["b"]["review"]) == (3, 0, 0)
    assert (got["a"]["fn"], got["a"]["fp"], got["a"]["review"]) == (0, 2, 0)
    assert (got["a,b"]["fn"], got["a,b"]["fp"], got["a,b"]["review"]) == (0, 2, 5)
    assert got["a,b"]["review_harmless"] == 2 and got["a,b"]["fpr"] == 1.0
    assert got["b"]["fnr"] == 1.0 and got["b"]["accuracy"] == 0.4


def test_json_has_the_documented_keys(run, policy, data):
    """Each setup prints one JSON object with the headline numbers, by_source and misclassified ids."""
    result = run("--policy", policy, "--json", data)
    assert result.exit_code == 0, result.stderr
    (row,) = rows(result).values()
    assert KEYS | {"by_source", "misclassified"} <= set(row)
    assert row["setup"] == "a,b,c" and row["n"] == 5
    assert sorted(row["by_source"]) == ["alpha", "beta", "gamma"]
    assert row["by_source"]["alpha"]["n"] == 2
    assert {m["id"] for m in row["misclassified"]} == {"ok-1", "ok-2"}
    assert row["invalid_votes"] == 5


def test_derived_policy_restricts_quorum(run, policy, data):
    """A one-detector setup runs a derived policy: version suffixed, quorum of one."""
    row = rows(run("--policy", policy, "-d", "a", "--json", data))["a"]
    assert row["policy"] == "split" and row["policy_version"] == "7+a"
    assert row["detectors"] == ["a"] and row["required"] == 1
    assert row["quarantine"] == 5


@pytest.mark.parametrize(
    ("names", "dissent"),
    [
        ("lexical,semantic", {"lexical": 0.999, "semantic": 0.99998}),
        ("rules,semantic", {"semantic": 0.99998}),
        ("rules,lexical", {"lexical": 0.999}),
    ],
)
def test_derived_policy_keeps_the_dissent_of_its_detectors(tmp_path, names, dissent):
    """A subset of the shipped quorum reads votes as the gate does: a kept detector keeps its
    dissent (a confident lone harmful vote goes to review), a dropped one takes its dissent along."""
    shipped = load_policy("prompt-injection")
    assert shipped.quorum.dissent == {"lexical": 0.999, "semantic": 0.99998}
    derived = resolve_setup(names, "prompt-injection", tmp_path).policy
    assert [d.name for d in derived.quorum.detectors] == names.split(",")
    assert derived.quorum.dissent == dissent
    assert derived.quorum.colocate_bytes == shipped.quorum.colocate_bytes
    short = derived.quorum.dissent_short
    if "semantic" in names:
        assert short == shipped.quorum.dissent_short
    else:
        assert short == ()


def test_other_policy_file_as_a_setup(run, policy, data, fixture_policy, tmp_path):
    """``name=path.yaml`` evaluates another policy file, labelled with the setup as written."""
    other = tmp_path / "trivial.yaml"
    shutil.copy(fixture_policy("trivial"), other)
    row = rows(run("--policy", policy, "-d", f"lenient={other}", "--json", data))[f"lenient={other}"]
    assert row["policy"] == "trivial" and (row["fn"], row["fp"]) == (3, 0)


def test_table_output(run, policy, data):
    """Without --json a table per run shows the rates, the sources and the misclassified ids."""
    result = run("--policy", policy, "-d", "b", data)
    assert result.exit_code == 0, result.stderr
    shown = ("FNR", "FPR", "p95 ms", "by source: b", "alpha", "misclassified (b): 3 of 5 (3 FN, 0 FP)")
    for text in (*shown, "FN bad-1 (allow)"):
        assert text in result.stdout
    assert "first bad one" not in result.stdout


def test_limit_and_skipped_records(run, policy, data):
    """--limit keeps the first N records of the policy; records of other policies are skipped."""
    result = run("--policy", policy, "--limit", "2", "--json", data)
    assert result.exit_code == 0
    assert next(iter(rows(result).values()))["n"] == 2
    full = next(iter(rows(run("--policy", policy, "--json", data)).values()))
    assert full["skipped"] == 1


def test_duplicate_texts_are_counted_per_record(run, policy, tmp_path):
    """Two records with the same bytes share one gate but both count."""
    path = tmp_path / "dups.jsonl"
    same = {"text": "same", "label": "harmless"}
    path.write_text(json.dumps({"id": "x", **same}) + "\n\n" + json.dumps({"id": "y", **same}) + "\n")
    row = rows(run("--policy", policy, "-d", "b", "--json", str(path)))["b"]
    assert row["n"] == 2 and row["fp"] == 0


def test_never_touches_the_users_data_dir(run, policy, data, tmp_path):
    """Eval runs on a throw-away folder, not CANARY_DATA_DIR."""
    assert run("--policy", policy, "--json", data).exit_code == 0
    assert not (tmp_path / "user-canary").exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-d", "a,zzz"], "zzz"),
        (["-d", "a,a"], "twice"),
        (["-d", ","], "names no detector"),
        (["-d", "x=missing.yaml"], "unknown policy"),
    ],
)
def test_bad_setups_are_usage_errors(run, policy, data, args, message):
    """An unknown, repeated or empty setup exits 2 with a message."""
    result = run("--policy", policy, *args, data)
    assert result.exit_code == 2 and message in result.stderr


def test_bad_inputs_are_usage_errors(run, policy, tmp_path):
    """A missing file, a malformed record, no records or an unknown policy exit 2."""
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "1", "text": "t", "label": "maybe"}\n')
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    assert run("--policy", policy, str(tmp_path / "nope.jsonl")).exit_code == 2
    result = run("--policy", policy, str(bad))
    assert result.exit_code == 2 and "bad.jsonl:1" in result.stderr
    assert run("--policy", policy, str(empty)).exit_code == 2
    assert run("--policy", "no-such-policy", str(bad)).exit_code == 2
