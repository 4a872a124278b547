"""HTTP intake on real services: the server enqueues, a `canary worker` process decides."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.web.live import TOKEN, LiveServer
from worker.settings import Settings
from worker.web.intake import create_intake_app

EXAMPLES = Path(__file__).resolve().parents[2] / "policies" / "examples" / "packages"
pytestmark = pytest.mark.integration


def wait_decided(http, gate_id: str, timeout: float = 90.0) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        state = http.get(f"/v1/artifacts/{gate_id}").json()
        if state["status"] not in ("pending", "running") or time.monotonic() > deadline:
            return state
        time.sleep(0.3)


def test_http_intake_with_a_broker_enqueues_and_workers_decide(service_env, start_worker):
    """With a broker the intake answers 202 at once; the worker quarantines the argued diff and allows the bump."""
    start_worker(service_env)
    server = LiveServer(create_intake_app(Settings(api_tokens=TOKEN)))
    try:
        with server.client() as http:
            assert http.get("/readyz").json()["checks"] == {"database": "ok", "store": "ok", "broker": "ok"}
            bad = http.post(
                "/v1/artifacts",
                params={"policy": "malicious-package"},
                content=(EXAMPLES / "diff-argues-back.diff").read_bytes(),
            )
            good = http.post(
                "/v1/artifacts",
                json={
                    "content": (EXAMPLES / "version-bump.diff").read_text(),
                    "policies": ["malicious-package"],
                },
            )
            assert bad.status_code == good.status_code == 202
            assert wait_decided(http, bad.json()["gate_ids"][0])["status"] == "quarantine"
            assert wait_decided(http, good.json()["gate_ids"][0])["status"] == "allow"
    finally:
        server.stop()


def test_readyz_names_an_unreachable_broker(service_env):
    """A broker nobody answers on makes /readyz 503 and says which dependency failed."""
    from tests.integration.services import free_port

    settings = Settings(broker_url=f"redis://127.0.0.1:{free_port()}/0", result_backend=None)
    server = LiveServer(create_intake_app(settings))
    try:
        with server.client(token=None) as http:
            ready = http.get("/readyz")
    finally:
        server.stop()
    assert ready.status_code == 503
    assert ready.json()["checks"]["database"] == "ok"
    assert ready.json()["checks"]["broker"].startswith("unreachable")
