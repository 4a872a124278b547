"""What a ``canary scan`` process loads and does before it gates: the start-up a user waits for
(issue #24). Each scan runs in a fresh interpreter, as a user's does; no test times anything."""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from worker import startup
from worker.cli import app

ROOT = Path(__file__).resolve().parents[2]
TRIVIAL = str(ROOT / "tests" / "fixtures" / "policies" / "trivial.yaml")

# ``python -m worker scan ...`` in this interpreter, then what it left behind, on the last line.
PROCESS = """
import gc, json, runpy, sys
sys.argv = ["canary", *json.loads(sys.argv[1])]
code = 0
try:
    runpy.run_module("worker", run_name="__main__", alter_sys=True)
except SystemExit as exc:
    code = exc.code
loaded = sorted(m for m in ("celery", "kombu", "httpx") if m in sys.modules)
print(json.dumps({"code": code, "loaded": loaded, "collecting": gc.isenabled(), "frozen": gc.get_freeze_count()}))
"""


def canary(tmp_path: Path, *args: str) -> tuple[list[str], dict[str, Any]]:
    """Run ``canary ARGS`` as its own process: (its output lines, what it had loaded and how)."""
    services = ("CANARY_BROKER_URL", "CANARY_DATABASE_URL", "CANARY_S3_ENDPOINT_URL")
    env = {k: v for k, v in os.environ.items() if k not in services}
    env |= {"CANARY_DATA_DIR": str(tmp_path / "data"), "CANARY_CACHE_DIR": str(tmp_path / "cache")}
    env["PYTHONPATH"] = str(ROOT)
    done = subprocess.run(
        [sys.executable, "-c", PROCESS, json.dumps(args)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    *lines, last = done.stdout.strip().splitlines()
    return lines, json.loads(last)


def test_a_second_scan_of_the_same_file_answers_without_celery(tmp_path):
    """Scanning a file again answers from the gate database, the same report and exit code,
    without loading Celery (or the registry client): the first scan ran the task graph."""
    sample = tmp_path / "notes.txt"
    sample.write_text("Release notes: fixed a crash in the CSV parser.\n")
    first, ran = canary(tmp_path, "scan", "--json", "-p", TRIVIAL, str(sample))
    again, answered = canary(tmp_path, "scan", "--json", "-p", TRIVIAL, str(sample))
    assert "celery" in ran["loaded"]
    assert [json.loads(line) for line in again] == [json.loads(line) for line in first]
    assert answered["code"] == ran["code"] == 0
    assert answered["loaded"] == []


def test_the_canary_process_collects_garbage_again_once_it_started(tmp_path):
    """``canary`` starts without the cyclic collector and turns it back on, with what start-up
    built frozen, before it reads the first artifact."""
    sample = tmp_path / "notes.txt"
    sample.write_text("hello")
    _, after = canary(tmp_path, "scan", "-p", TRIVIAL, str(sample))
    assert after["code"] == 0
    assert after["collecting"] is True
    assert after["frozen"] > 10_000


def test_a_scan_leaves_the_sqlite_database_closed(tmp_path):
    """After ``canary scan`` the embedded database is one closed file: its write-ahead log was
    folded back, although start-up objects are never collected."""
    sample = tmp_path / "notes.txt"
    sample.write_text("hello")
    canary(tmp_path, "scan", "-p", TRIVIAL, str(sample))
    assert (tmp_path / "data" / "canary.db").is_file()
    assert not (tmp_path / "data" / "canary.db-wal").exists()


def test_an_application_running_the_cli_keeps_its_collector(tmp_path, monkeypatch):
    """Invoked from another program (a test's CliRunner), ``canary scan`` neither pauses nor
    freezes that program's collector."""
    monkeypatch.setenv("CANARY_DATA_DIR", str(tmp_path / "data"))
    sample = tmp_path / "notes.txt"
    sample.write_text("hello")
    frozen = gc.get_freeze_count()
    result = CliRunner().invoke(app, ["scan", "-p", TRIVIAL, str(sample)])
    assert result.exit_code == 0, result.output
    assert gc.isenabled()
    assert gc.get_freeze_count() == frozen


def test_a_paused_start_up_resumes_once(tmp_path):
    """The entry point's pause lasts until the command's set-up is done; a host that had turned
    the collector off keeps it off."""
    gc.disable()
    try:
        startup.pause()  # the host's choice: left alone
        with startup.setting_up():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()
