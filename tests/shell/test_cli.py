"""The `canary` command line: exit codes, tables, JSON lines, usage errors."""

from __future__ import annotations

import getpass
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from worker.cli import app

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "policies"


def test_scan_exits_zero_when_everything_is_allowed(run, tmp_path):
    """All allowed -> exit 0 and a table naming the decision."""
    f = tmp_path / "a.txt"
    f.write_text("hello")
    result = run("scan", "--policy", str(FIXTURES / "trivial.yaml"), str(f))
    assert result.exit_code == 0, result.output
    assert "allow" in result.output


def test_scan_exits_one_when_anything_is_held_back(run, tmp_path):
    """A quarantined item -> exit 1."""
    f = tmp_path / "a.txt"
    f.write_text("hello")
    result = run(
        "scan", "--policy", str(FIXTURES / "trivial.yaml"), "--policy", str(FIXTURES / "harmful.yaml"), str(f)
    )
    assert result.exit_code == 1
    assert "quarantine" in result.output


def test_scan_json_prints_one_report_per_line(run, tmp_path):
    """--json prints one report object per gate, keyed by decision."""
    for name in ("a", "b"):
        (tmp_path / f"{name}.txt").write_text(name)
    result = run(
        "scan",
        "--json",
        "--policy",
        str(FIXTURES / "malformed.yaml"),
        str(tmp_path / "a.txt"),
        str(tmp_path / "b.txt"),
    )
    reports = [json.loads(line) for line in result.output.strip().splitlines()]
    assert [r["decision"] for r in reports] == ["review", "review"]
    assert result.exit_code == 1


def test_scan_reads_stdin(run):
    """`-` reads the artifact from standard input."""
    result = CliRunner().invoke(
        app, ["scan", "--json", "--policy", str(FIXTURES / "trivial.yaml"), "-"], input="from stdin"
    )
    assert json.loads(result.output)["decision"] == "allow"


@pytest.mark.parametrize(
    "args",
    [
        ("scan", "/no/such/file"),
        ("scan", "--policy", "no-such-policy", "README.md"),
        ("scan",),
        ("scan", "--bogus", "x"),
    ],
)
def test_usage_errors_exit_two(run, args):
    """Missing files, unknown policies, missing or unknown arguments exit 2."""
    assert run(*args).exit_code == 2


def test_status_reports_decided_gates(run, tmp_path):
    """status --json gives status and the report for gates created by scan."""
    f = tmp_path / "a.txt"
    f.write_text("hello")
    scanned = json.loads(run("scan", "--json", "--policy", str(FIXTURES / "trivial.yaml"), str(f)).output)
    result = run("status", "--json", scanned["gate_id"])
    row = json.loads(result.output)
    assert row["status"] == "allow" and row["report"]["gate_id"] == scanned["gate_id"]


def test_submit_without_broker_is_a_usage_error(run, tmp_path):
    """submit needs CANARY_BROKER_URL and says so."""
    f = tmp_path / "a.txt"
    f.write_text("x")
    result = run("submit", str(f))
    assert result.exit_code == 2


def test_review_commands_drain_the_quarantine(run, tmp_path):
    """`review list --quarantined` names unreviewed quarantines; a release needs --note (exit 2 without)."""
    f = tmp_path / "a.txt"
    f.write_text("flagged")
    assert run("scan", "--policy", str(FIXTURES / "harmful.yaml"), str(f)).exit_code == 1
    assert run("review", "list", "--json").output == ""
    listed = [
        json.loads(line) for line in run("review", "list", "--quarantined", "--json").output.splitlines()
    ]
    assert [(r["status"], r["source"]) for r in listed] == [("quarantine", str(f))]

    gid = listed[0]["gate_id"]
    # The reviewer is the one mapped to this OS user; --by (kept for old scripts) must name them.
    add = CliRunner().invoke(
        app, ["review", "add-user", "ann", "--os-user", getpass.getuser()], input="a-long-password\n"
    )
    assert add.exit_code == 0, add.output
    assert run("review", "decide", gid, "-d", "allow", "--by", "ann").exit_code == 2
    released = run("review", "decide", gid, "-d", "allow", "--by", "ann", "--note", "known vendor file")
    assert released.exit_code == 0, released.output
    assert released.output.split() == [gid, "allow", "ann"]
    assert run("review", "list", "--quarantined").output == ""


@pytest.mark.parametrize(
    ("args", "env", "expected"),
    [
        ([], {}, ["flower", "--address=127.0.0.1"]),  # no auth: loopback only
        (["--port=5566"], {}, ["flower", "--address=127.0.0.1", "--port=5566"]),
        ([], {"FLOWER_BASIC_AUTH": "ops:secret"}, ["flower"]),
        (["--basic-auth=ops:secret"], {}, ["flower", "--basic-auth=ops:secret"]),
        (
            ["--auth_provider=flower.views.auth.GithubLoginHandler"],
            {},
            ["flower", "--auth_provider=flower.views.auth.GithubLoginHandler"],
        ),
        (["--address=0.0.0.0"], {}, ["flower", "--address=0.0.0.0"]),  # an explicit choice is kept
        ([], {"FLOWER_ADDRESS": "10.0.0.5"}, ["flower"]),
    ],
)
def test_flower_without_authentication_listens_on_loopback_only(args, env, expected):
    """Flower can revoke and terminate tasks: without auth it is not served to other hosts by default."""
    from worker.cli import flower_argv

    assert flower_argv(args, env) == expected
