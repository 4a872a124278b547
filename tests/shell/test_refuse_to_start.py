"""A policy that cannot work stops `canary scan/submit/worker` at start: one line, exit 2.

And a database or object store that does not answer is no traceback: one line, exit 3, and
`submit` names the inputs it did not gate.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

import policies.loader as loader
from worker.cli import app

ROOT = Path(__file__).resolve().parents[2]
POLICY = """\
id: broken
version: "1"
harm_definition: test
input_description: anything
precheck: {{rulesets: [{rulesets}]}}
quorum:
  required: 2
  detectors:
    - {{name: a, kind: static}}
    - {{name: b, kind: {kind}, options: {options}}}
    - {{name: c, kind: static}}
"""


@pytest.fixture()
def run(tmp_path, monkeypatch):
    """The CLI in-process, embedded, with a folder of policies and rule files of the test's own."""
    monkeypatch.setenv("CANARY_DATA_DIR", str(tmp_path / "data"))
    for var in ("CANARY_BROKER_URL", "CANARY_DATABASE_URL", "CANARY_S3_ENDPOINT_URL"):
        monkeypatch.delenv(var, raising=False)
    (tmp_path / "rules").mkdir()
    monkeypatch.setattr(loader, "POLICY_DIR", tmp_path)
    monkeypatch.setattr(loader, "RULES_DIR", tmp_path / "rules")
    (tmp_path / "input.txt").write_text("hello")
    runner = CliRunner()
    return lambda *args: runner.invoke(app, list(args))


def _policy(folder: Path, kind: str = "static", options: str = "{}", rulesets: str = "") -> str:
    path = folder / "broken.yaml"
    path.write_text(POLICY.format(kind=kind, options=options, rulesets=rulesets))
    return str(path)


def _refused(result, *words: str) -> None:
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("canary: "), result.output
    for word in words:
        assert word in lines[0]


def test_an_unknown_detector_kind_refuses_to_scan(run, tmp_path):
    """A typo in a detector's kind stops the scan (it would silently turn 2-of-3 into 2-of-2)."""
    _refused(run("scan", "-p", _policy(tmp_path, kind="semantc"), str(tmp_path / "input.txt")), "semantc")


def test_unknown_options_of_a_model_detector_refuse_to_scan(run, tmp_path):
    """An option a local model detector does not read stops the scan, naming it."""
    policy = _policy(tmp_path, kind="semantic", options="{prose: true, treshold: 0.5}")
    _refused(run("scan", "-p", policy, str(tmp_path / "input.txt")), "treshold")


def test_a_bad_option_value_refuses_to_scan(run, tmp_path):
    """A wrongly typed option (prose: "no" as a string) stops the scan."""
    policy = _policy(tmp_path, kind="lexical", options='{prose: "no"}')
    _refused(run("scan", "-p", policy, str(tmp_path / "input.txt")), "prose")


def test_a_rule_that_does_not_compile_refuses_to_submit(run, tmp_path, monkeypatch):
    """An invalid regex in a rule file stops `submit` before anything is stored or sent."""
    (tmp_path / "rules" / "bad.yaml").write_text(
        'id: bad\nversion: "1"\nrules:\n  - {id: bad.one, description: d, weight: 1.0, pattern: "(unclosed"}\n'
    )
    monkeypatch.setenv("CANARY_BROKER_URL", "redis://127.0.0.1:1/0")  # never reached
    _refused(
        run("submit", "-p", _policy(tmp_path, rulesets="bad"), str(tmp_path / "input.txt")),
        "bad.yaml",
        "unterminated",
    )


def test_the_worker_refuses_to_start_with_a_broken_shipped_policy(run, tmp_path, monkeypatch):
    """`canary worker` checks every shipped policy before it takes work."""
    _policy(tmp_path, kind="semantc")
    monkeypatch.setenv("CANARY_BROKER_URL", "redis://127.0.0.1:1/0")
    _refused(run("worker"), "semantc")


def test_a_sound_look_alike_policy_still_scans(run, tmp_path):
    """Known kinds, known options and compiling rules pass the check and are gated."""
    (tmp_path / "rules" / "good.yaml").write_text(
        'id: good\nversion: "1"\nrules:\n  - {id: good.one, description: d, weight: 1.0, pattern: "(closed)"}\n'
    )
    policy = _policy(tmp_path, kind="static", options="{delay_s: 0}", rulesets="good")
    result = run("scan", "-p", policy, str(tmp_path / "input.txt"))
    assert result.exit_code == 0, result.output


def _canary(tmp_path: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("CANARY_")}
    return subprocess.run(
        [sys.executable, "-m", "worker", *args],
        cwd=ROOT,
        env={**clean, "CANARY_DATA_DIR": str(tmp_path / "data"), **env},
        capture_output=True,
        text=True,
        timeout=300,
    )


def _inputs(tmp_path: Path) -> list[str]:
    names = []
    for i in range(2):
        (tmp_path / f"in-{i}.txt").write_text(f"input {i}")
        names.append(str(tmp_path / f"in-{i}.txt"))
    return names


TRIVIAL = str(ROOT / "tests" / "fixtures" / "policies" / "trivial.yaml")


def test_an_invalid_database_url_is_a_configuration_error(tmp_path):
    """`submit` with CANARY_DATABASE_URL not a URL: one line, exit 2, no traceback."""
    env = {"CANARY_BROKER_URL": "redis://127.0.0.1:1/0", "CANARY_DATABASE_URL": "not a url"}
    out = _canary(tmp_path, env, "submit", "-p", TRIVIAL, *_inputs(tmp_path))
    assert out.returncode == 2, out.stderr
    assert "Traceback" not in out.stderr and "configuration error" in out.stderr


DOWN = "127.0.0.1:1"  # nothing listens on port 1
S3_DOWN = {
    "CANARY_S3_ENDPOINT_URL": f"http://{DOWN}",
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
}


@pytest.mark.parametrize(
    "down",
    [{"CANARY_DATABASE_URL": f"postgresql+psycopg://postgres@{DOWN}/nothing"}, S3_DOWN],
    ids=["postgres", "s3"],
)
def test_a_service_that_does_not_answer_is_an_infrastructure_error(tmp_path, down):
    """`submit` with Postgres or S3 down: exit 3 (not 1, the 'blocked' code), one error line, inputs named."""
    names = _inputs(tmp_path)
    out = _canary(
        tmp_path, {"CANARY_BROKER_URL": f"redis://{DOWN}/0", **down}, "submit", "-p", TRIVIAL, *names
    )
    assert out.returncode == 3, out.stderr
    assert "Traceback" not in out.stderr
    assert [n for n in names if f"not gated: {n}" not in out.stderr] == []
    assert sum("infrastructure error" in line for line in out.stderr.splitlines()) == 1
