"""Every metric operators alert on is on /metrics after `canary scan` of the bundled examples."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from tests.integration.services import free_port

ROOT = Path(__file__).resolve().parents[2]
NAMED = [
    'canary_decisions_total{decision="quarantine",policy="malicious-package"}',
    'canary_stage_seconds_bucket{le="0.001",stage="intake"}',
    'canary_stage_seconds_count{stage="precheck"}',
    'canary_stage_seconds_count{stage="detect"}',
    'canary_stage_seconds_count{stage="decide"}',
    'canary_stage_seconds_count{stage="publish"}',
    'canary_detector_errors_total{detector="semantic",kind="timeout"}',
    'canary_gates{status="quarantine"}',
    'canary_oldest_open_gate_seconds{policy="prompt-injection"}',
    'canary_gates_awaiting_person{queue="review"}',
    'canary_gates_awaiting_person{queue="quarantine"}',
]


def test_every_named_metric_is_served_after_an_embedded_run(tmp_path: Path) -> None:
    """scan in one process, `canary metrics` in another (loopback): decisions, stage histograms,
    detector errors, gates, oldest open gate and backlogs are all there."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CANARY_", "PROMETHEUS_"))}
    env |= {"CANARY_DATA_DIR": str(tmp_path / "data"), "PYTHONPATH": str(ROOT)}
    examples = str(ROOT / "policies" / "examples")
    scan = subprocess.run(
        [sys.executable, "-m", "worker", "scan", "-p", "malicious-package", "-p", "prompt-injection", examples],
        cwd=ROOT, env=env, capture_output=True, timeout=300,
    )  # fmt: skip
    assert scan.returncode == 1, scan.stderr[-2000:]
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "worker", "metrics", "--port", str(port)],
        cwd=ROOT,
        env=env,
        stderr=subprocess.PIPE,
    )
    try:
        body = ""
        deadline = time.monotonic() + 60
        while not body and time.monotonic() < deadline:
            try:
                body = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
            except OSError:
                time.sleep(0.2)
    finally:
        server.terminate()
        _, err = server.communicate(timeout=30)
    assert b"http://127.0.0.1:" in err  # bound to loopback unless told otherwise
    missing = [name for name in NAMED if name not in body]
    assert missing == [], missing
