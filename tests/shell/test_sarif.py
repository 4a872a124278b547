"""`canary scan --format sarif`: a SARIF 2.1.0 log GitHub code scanning reads (keys checked by hand,
no schema is downloaded)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from worker.cli.sarif import SarifLog
from worker.core.models import Coverage, PolicyRef, PrecheckResult, Report, Vote

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "policies"

# Two files change; the install hook and its payload are on lines 21 and 22 of package.json.
HOOK_DIFF = (
    "diff --git a/README.md b/README.md\n"
    "--- a/README.md\n"
    "+++ b/README.md\n"
    "@@ -10,2 +10,2 @@\n"
    " intro\n"
    "-old words\n"
    "+new words\n"
    "diff --git a/package.json b/package.json\n"
    "--- a/package.json\n"
    "+++ b/package.json\n"
    "@@ -20,2 +20,5 @@\n"
    '   "version": "2.3.0",\n'
    '+  "scripts": {\n'
    '+    "postinstall": "npm install -g openclaw@latest"\n'
    "+  },\n"
    '   "bin": {}\n'
)


def _checked(text: str) -> dict[str, Any]:
    """The log parsed, with every key GitHub code scanning requires present and well typed."""
    log = json.loads(text)
    assert log["version"] == "2.1.0"
    assert log["$schema"].endswith("sarif-2.1.0.json")
    (run,) = log["runs"]
    driver = run["tool"]["driver"]
    assert driver["name"] == "Canary Gate"
    rule_ids = [rule["id"] for rule in driver["rules"]]
    assert len(rule_ids) == len(set(rule_ids))
    for rule in driver["rules"]:
        assert rule["shortDescription"]["text"]
        assert rule["defaultConfiguration"]["level"] in ("error", "warning")
    for result in run["results"]:
        assert result["ruleId"] in rule_ids
        assert result["level"] in ("error", "warning")
        assert result["message"]["text"]
        (location,) = result["locations"]
        physical = location["physicalLocation"]
        assert physical["artifactLocation"]["uri"]
        assert isinstance(physical["region"]["startLine"], int)
        assert physical["region"]["startLine"] >= 1
    return log


def _scan(run, tmp_path: Path, policy: str, name: str, content: str, *extra: str) -> Any:
    path = tmp_path / name
    path.write_text(content)
    return run("scan", "--policy", str(FIXTURES / policy), *extra, str(path))


def test_sarif_has_one_result_per_evidence_with_file_and_line(run, tmp_path):
    """Each pre-check hit in a diff is one error result at its file and line in the new version."""
    result = _scan(run, tmp_path, "package-rules.yaml", "release.diff", HOOK_DIFF, "--format", "sarif")
    assert result.exit_code == 1, result.output
    log = _checked(result.stdout)
    report = json.loads(
        _scan(run, tmp_path, "package-rules.yaml", "release.diff", HOOK_DIFF, "--json").stdout
    )
    results = log["runs"][0]["results"]
    assert report["decision"] == "quarantine"
    assert len(results) == len(report["precheck"]["evidence"]) >= 2
    assert sorted(r["ruleId"] for r in results) == sorted(
        e["rule_id"] for e in report["precheck"]["evidence"]
    )
    where = {
        r["ruleId"]: (
            r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
            r["locations"][0]["physicalLocation"]["region"]["startLine"],
        )
        for r in results
    }
    assert where["mp.hook.npm-lifecycle"] == ("package.json", 22)
    assert {r["level"] for r in results} == {"error"}
    assert all(report["reason"] in r["message"]["text"] for r in results)
    assert "openclaw" not in json.dumps(log)  # artifact text stays out of the log
    fired = {rule["id"] for rule in log["runs"][0]["tool"]["driver"]["rules"]}
    assert fired == set(where)


def test_harmless_scan_gives_zero_results(run, tmp_path):
    """Everything allowed: a valid log with no results and exit 0."""
    result = _scan(run, tmp_path, "trivial.yaml", "notes.txt", "hello\n", "--format", "sarif")
    assert result.exit_code == 0, result.output
    log = _checked(result.stdout)
    assert log["runs"][0]["results"] == []
    assert log["runs"][0]["tool"]["driver"]["rules"] == []


def test_model_only_quarantine_gets_a_result_per_harmful_vote(run, tmp_path):
    """No pre-check evidence: each detector that voted harmful is a result at the scanned file."""
    result = _scan(run, tmp_path, "harmful.yaml", "plain.txt", "hello\n", "--format", "sarif")
    assert result.exit_code == 1
    results = _checked(result.stdout)["runs"][0]["results"]
    assert sorted(r["ruleId"] for r in results) == ["detector/a", "detector/b"]
    for r in results:
        uri = r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
        assert uri == (tmp_path / "plain.txt").as_uri()
        assert r["level"] == "error"


def test_review_is_a_warning(run, tmp_path):
    """A gate sent to review is reported at warning level, naming the detectors that failed."""
    result = _scan(run, tmp_path, "malformed.yaml", "plain.txt", "hello\n", "--format", "sarif")
    assert result.exit_code == 1
    results = _checked(result.stdout)["runs"][0]["results"]
    assert {r["ruleId"] for r in results} == {"detector/chatty", "detector/extra"}
    assert {r["level"] for r in results} == {"warning"}


def test_json_and_sarif_together_is_a_usage_error(run, tmp_path):
    """--json with --format sarif asks for two outputs: exit 2 and nothing gated."""
    result = _scan(run, tmp_path, "trivial.yaml", "notes.txt", "hello\n", "--json", "--format", "sarif")
    assert result.exit_code == 2


def test_held_back_without_evidence_still_gets_a_result():
    """A gate held back with no evidence and no dissenting vote is one result for the artifact."""
    report = Report(
        gate_id="g1",
        sha256="0" * 64,
        policy=PolicyRef(id="p", version="1", sha256="1" * 64),
        decision="review",
        reason="release needs a second person",
        precheck=PrecheckResult(verdict="harmless"),
        votes=(Vote(detector="a", backend="static", verdict="harmless", coverage=Coverage.full(5)),),
        coverage=Coverage.full(5),
    )
    log = SarifLog(describe=lambda ref: {})
    log.add("mbox:mail/box.mbox#3", b"hello", "p", report.model_dump_json())
    log.add("ok.txt", b"hello", "p", report.model_copy(update={"decision": "allow"}).model_dump_json())
    (result,) = _checked(json.dumps(log.document()))["runs"][0]["results"]
    assert result["ruleId"] == "gate/review"
    assert result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "mail/box.mbox"
