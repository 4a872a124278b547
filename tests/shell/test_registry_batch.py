"""`canary submit @LIST` on a registry batch: progress on a terminal, and a rerun that downloads
nothing already gated (the release checkpoint), against the loopback registries of
``tests.fixtures.registry``."""

from __future__ import annotations

import io
import json
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from producers.registry import resolve_release
from tests.fixtures.registry import PKG_HOOK, PKG_OLD, SETUP_NEW, SETUP_OLD, npm_files, tarball
from worker.adapters.db import FETCHED, INTAKE_FAILED, Gate, ReleaseGateRepo
from worker.cli import app
from worker.cli.meter import BatchMeter, describe_progress
from worker.pipeline.fetch import fetch_release
from worker.settings import Settings
from worker.tasks.embedded import EmbeddedGate

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "policies"


def test_progress_line_gives_count_rate_and_time_left():
    """The progress line reads done/total, the rate and the time left, in units a person reads."""
    assert describe_progress(0, 120, 0.0) == "0/120 inputs"
    assert describe_progress(30, 120, 12.0) == "30/120 inputs, 2.5/s, 36s left"
    assert describe_progress(3, 400, 60.0) == "3/400 inputs, 3.0/min, 2h12m left"
    assert describe_progress(50, 200, 20.0) == "50/200 inputs, 2.5/s, 1m00s left"
    assert describe_progress(120, 120, 40.0) == "120/120 inputs, 3.0/s"
    assert describe_progress(7, None, 2.0) == "7 inputs, 3.5/s"


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_is_drawn_on_a_terminal_only_and_erased_at_the_end():
    """On a terminal one line is redrawn in place and erased at the end; piped, nothing is written."""
    now = [100.0]
    tty = _Terminal()
    meter = BatchMeter(4, tty, clock=lambda: now[0], every_s=0.2)
    now[0] = 102.0
    meter.update(2)
    now[0] = 102.1
    meter.update(3)  # within every_s of the last draw: not redrawn
    now[0] = 104.0
    meter.update(4)
    meter.close()
    first, last = "2/4 inputs, 1.0/s, 2s left", "4/4 inputs, 1.0/s"
    assert tty.getvalue() == f"\r{first}\r{last.ljust(len(first))}\r{' ' * len(last)}\r"

    piped = io.StringIO()
    quiet = BatchMeter(4, piped)
    quiet.update(4)
    quiet.close()
    assert piped.getvalue() == ""


def test_release_checkpoint_counts_only_gates_that_exist(gate, fixture_policy):
    """A release counts as gated under the given policies only while its gate rows exist."""
    (held,) = gate.submit(b"a release diff", [fixture_policy("trivial")], source="pypi:x:1->2").gates
    repo = ReleaseGateRepo(gate.rt.repo.engine)
    policy = (held.policy_id, held.policy_sha256)
    repo.record("pypi:x==2", [held])
    assert repo.gated(["pypi:x==2", "pypi:x==3"], [policy]) == {"pypi:x==2": [held.id]}
    assert repo.gated(["pypi:x==2"], [policy, ("other", "0" * 64)]) == {}  # a policy not gated yet
    ghost = Gate.model_validate(held.model_dump() | {"id": "f" * 32})
    repo.record("pypi:gone==1", [ghost])  # its gate row does not exist
    assert repo.gated(["pypi:gone==1"], [policy]) == {}


def test_a_release_is_keyed_by_ecosystem_normalised_name_and_version(served):
    """Two spellings of one PyPI project name one release; nothing is downloaded to resolve it."""
    reg, base = served
    reg.pypi("demo-pkg", {"1.0.0": tarball("demo_pkg-1.0.0", {"setup.py": SETUP_OLD})})
    reg.npm("@acme/thing", {"0.1.0": tarball("package", npm_files(PKG_OLD))}, base, latest="0.1.0")
    with httpx.Client(timeout=10) as client:
        assert resolve_release(client, "pypi:Demo_Pkg").key == "pypi:demo-pkg==1.0.0"
        assert resolve_release(client, "pypi:demo-pkg==1.0.0").key == "pypi:demo-pkg==1.0.0"
        assert resolve_release(client, "npm:@acme/thing").key == "npm:@acme/thing@0.1.0"
    assert not [path for path in reg.requests if path in reg.blobs]


@pytest.fixture()
def nightly(served, tmp_path, monkeypatch):
    """A registry with a bump, a first release and a hook whose new archive is tampered with; a
    list naming them (two pinned, one newest); `submit` in-process on an in-memory broker, and
    `work` running the fetch task's body on what it recorded (SQLite and folders)."""
    reg, base = served
    reg.pypi(
        "demo-pkg",
        {
            "1.0.0": tarball("demo_pkg-1.0.0", {"setup.py": SETUP_OLD}),
            "1.0.1": tarball("demo_pkg-1.0.1", {"setup.py": SETUP_NEW}),
        },
    )
    reg.npm("demo-npm", {"1.0.0": tarball("package", npm_files(PKG_OLD))}, base, latest="1.0.0")
    hooked = {
        "1.0.0": tarball("package", npm_files(PKG_OLD)),
        "1.0.1": tarball("package", npm_files(PKG_HOOK)),
    }
    reg.npm("hooked", hooked, base, latest="1.0.1")
    reg.tamper.add("/tarballs/hooked-1.0.1.tgz")
    listing = tmp_path / "tonight.txt"
    listing.write_text("pypi:demo-pkg==1.0.1\nnpm:demo-npm\nnpm:hooked@1.0.1\n")
    monkeypatch.setenv("CANARY_DATA_DIR", str(tmp_path / "canary"))
    monkeypatch.setenv("CANARY_BROKER_URL", "memory://")
    monkeypatch.setenv("CANARY_RESULT_BACKEND", "cache+memory://")
    for var in ("CANARY_DATABASE_URL", "CANARY_S3_ENDPOINT_URL"):
        monkeypatch.delenv(var, raising=False)
    policy = str(FIXTURES / "package-rules.yaml")

    def submit() -> list[dict]:
        result = CliRunner().invoke(app, ["submit", "--json", "-p", policy, f"@{listing}"])
        assert result.exit_code == 0, result.output
        return [json.loads(line) for line in result.stdout.splitlines()]

    def work(rows: list[dict]) -> dict[str, str]:
        gate = EmbeddedGate(Settings())
        with httpx.Client(timeout=10) as client:

            def run(fetch_id: str) -> str:
                return fetch_release(gate.rt, fetch_id, client, lambda ids: [gate.run(i) for i in ids]).status

            return {row["spec"]: run(row["fetch_id"]) for row in rows if "fetch_id" in row}

    return reg, submit, work


def test_a_rerun_downloads_nothing_already_gated_and_retries_what_failed(nightly):
    """Run a nightly batch twice: what the first run gated is not downloaded again but named with
    its gate ids (by the submitter for a pinned release, by the worker for the newest one); the
    release whose archive failed its digest the first time is fetched and gated the second."""
    reg, submit, work = nightly

    first_rows = submit()
    first = work(first_rows)

    assert first == {
        "pypi:demo-pkg==1.0.1": FETCHED,
        "npm:demo-npm": FETCHED,
        "npm:hooked@1.0.1": INTAKE_FAILED,
    }
    gate = EmbeddedGate(Settings())
    ended = gate.rt.fetch_repo.get_many(row["fetch_id"] for row in first_rows)
    gated = {row.spec: row.gates for row in ended.values()}

    reg.tamper.clear()
    reg.requests.clear()
    rows = submit()

    already = [row for row in rows if row.get("already_gated")]
    assert [(row["spec"], row["gate_id"]) for row in already] == [
        ("pypi:demo-pkg==1.0.1", gated["pypi:demo-pkg==1.0.1"][0])  # named, not even recorded
    ]
    assert already[0]["source"] == "pypi:demo-pkg:1.0.0->1.0.1" and already[0]["new"] is False
    assert [row["spec"] for row in rows if "fetch_id" in row] == ["npm:demo-npm", "npm:hooked@1.0.1"]
    second = work(rows)

    assert second == {"npm:demo-npm": "already_gated", "npm:hooked@1.0.1": FETCHED}
    assert sorted(path for path in reg.requests if path in reg.blobs) == [
        "/tarballs/hooked-1.0.0.tgz",
        "/tarballs/hooked-1.0.1.tgz",
    ]
    again = gate.rt.fetch_repo.get_many(row["fetch_id"] for row in rows if row["spec"] == "npm:demo-npm")
    (newest,) = again.values()
    assert (newest.status, newest.reason, newest.label) == (
        FETCHED,
        "already gated",
        "npm:demo-npm:1.0.0:new-package",
    )
    assert newest.gates == gated["npm:demo-npm"]
    shown = CliRunner().invoke(app, ["status", newest.id]).stdout
    assert shown == f"{newest.id}\t{FETCHED}\tnpm:demo-npm\talready gated {newest.gates[0]}\n"


def test_a_rerun_under_another_policy_fetches_again(nightly):
    """A release gated under one policy is fetched again for a batch under another."""
    reg, submit, work = nightly
    work(submit())
    reg.requests.clear()
    result = CliRunner().invoke(
        app, ["submit", "--json", "-p", str(FIXTURES / "trivial.yaml"), "pypi:demo-pkg==1.0.1"]
    )
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert work(rows) == {"pypi:demo-pkg==1.0.1": FETCHED}
    assert len([path for path in reg.requests if path in reg.blobs]) == 2
