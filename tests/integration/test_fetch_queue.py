"""Registry releases through the fetch queue: `canary submit @LIST` records them, a real
`canary worker` fetches, diffs and gates them; a bad release gets its own failure record."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.fixtures.registry import (
    INIT,
    PKG_HOOK,
    PKG_OLD,
    SETUP_NEW,
    SETUP_OLD,
    Registry,
    npm_files,
    serving,
    tarball,
)
from tests.integration.services import run_canary
from worker.adapters.db import FETCHED, INTAKE_FAILED, FetchRepo, GateRepo, make_engine
from worker.settings import Settings

pytestmark = pytest.mark.integration


def test_a_release_list_is_fetched_and_gated_by_a_worker(service_env, start_worker, tmp_path: Path):
    """A bump is allowed and an install hook quarantined by the worker that fetched them; a missing
    release ends intake_failed with its own one-line reason, and `canary status` shows each."""
    reg = Registry()
    with serving(reg) as base:
        reg.pypi(
            "demo-pkg",
            {
                "1.0.0": tarball("demo_pkg-1.0.0", {"setup.py": SETUP_OLD, "demo/__init__.py": INIT}),
                "1.0.1": tarball("demo_pkg-1.0.1", {"setup.py": SETUP_NEW, "demo/__init__.py": INIT}),
            },
        )
        releases = {
            "1.0.0": tarball("package", npm_files(PKG_OLD)),
            "1.0.1": tarball("package", npm_files(PKG_HOOK)),
        }
        reg.npm("demo-npm", releases, base, latest="1.0.1")
        env = {**service_env, "CANARY_PYPI_INDEX_URL": f"{base}/simple", "CANARY_NPM_REGISTRY": base}
        listing = tmp_path / "tonight.txt"
        listing.write_text("pypi:demo-pkg\nnpm:demo-npm\nnpm:no-such-pkg@1.0.0\n")

        submitted = run_canary(env, "submit", "--json", "-p", "malicious-package", f"@{listing}")
        assert submitted.returncode == 0, submitted.stderr
        assert reg.requests == []  # the submitting host downloaded nothing
        ids = [json.loads(line)["fetch_id"] for line in submitted.stdout.splitlines()]
        start_worker(env)
        engine = make_engine(Settings().sqlalchemy_url)
        fetches, repo = FetchRepo(engine), GateRepo(engine)
        deadline = time.monotonic() + 600  # a hang, not a slow machine
        while time.monotonic() < deadline:
            rows = fetches.get_many(ids)
            gate_ids = [g for row in rows.values() for g in row.gates]
            gates = repo.get_many(gate_ids)
            if all(r.status != "pending" for r in rows.values()) and all(g.terminal for g in gates.values()):
                break
            time.sleep(0.5)

    bump, hook, missing = (rows[i] for i in ids)
    assert (bump.status, hook.status, missing.status) == (FETCHED, FETCHED, INTAKE_FAILED)
    assert [gates[g].status for g in bump.gates] == ["allow"]
    assert [gates[g].status for g in hook.gates] == ["quarantine"]
    assert missing.reason is not None and "no-such-pkg" in missing.reason and "\n" not in missing.reason
    shown = run_canary(env, "status", "--json", missing.id)
    assert shown.returncode == 0 and json.loads(shown.stdout)["status"] == INTAKE_FAILED
    assert {r.attempts for r in rows.values()} == {1}
