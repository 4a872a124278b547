"""Real services for integration tests: Redis, Postgres, moto's S3 server, `canary worker` processes.

Each service is required: missing locally -> skip, missing under CI=true -> fail.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.services import (
    check_postgres,
    check_redis,
    database_url,
    free_port,
    redis_url,
    require,
    start_moto_server,
    stop_process,
)

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.integration


@pytest.fixture(scope="session")
def moto_endpoint() -> Iterator[str]:
    """A moto S3-protocol server on loopback for the whole session."""
    port = free_port()
    try:
        proc = start_moto_server(port)
    except Exception as exc:  # noqa: BLE001
        require(False, f"moto server could not start: {exc}")
    yield f"http://127.0.0.1:{port}"
    stop_process(proc)


@pytest.fixture()
def service_env(moto_endpoint: str, tmp_path: Path) -> Iterator[dict[str, str]]:
    """Environment pointing Canary Gate at the test Redis db (wiped), a clean Postgres schema and new buckets."""
    broker = redis_url()
    require(check_redis(broker) is None, f"redis: {check_redis(broker)}")
    db = database_url()
    require(check_postgres(db) is None, f"postgres: {check_postgres(db)}")
    import redis
    from sqlalchemy import text

    from worker.adapters.db import make_engine

    # Broker and result backend share the one configured Redis db (their keys never collide):
    # the tests wipe that db and nothing else, so a shared machine keeps its other data.
    broker_url = backend_url = broker
    redis.Redis.from_url(broker_url).flushdb()
    engine = make_engine(db)
    with engine.begin() as conn:
        conn.execute(text("TRUNCATE gates, submissions, audit_events, fetches, release_gates"))
    engine.dispose()
    suffix = uuid.uuid4().hex[:8]
    env = {
        "CANARY_BROKER_URL": broker_url,
        "CANARY_RESULT_BACKEND": backend_url,
        "CANARY_DATABASE_URL": db,
        "CANARY_S3_ENDPOINT_URL": moto_endpoint,
        "CANARY_ARTIFACT_BUCKET": f"artifacts-{suffix}",
        "CANARY_QUARANTINE_BUCKET": f"quarantine-{suffix}",
        "CANARY_DATA_DIR": str(tmp_path / "data"),
        "CANARY_ALLOWED_QUEUE": f"canary.allowed.{suffix}",
        "CANARY_REVIEW_QUEUE": f"canary.review.{suffix}",
        "CANARY_TASK_QUEUE": f"canary.gate.{suffix}",
        "CANARY_FETCH_QUEUE": f"canary.fetch.{suffix}",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
    }
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    yield env
    for k, v in old.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


class WorkerProcess:
    """A `canary worker` subprocess in its own process group (so kill -9 takes the whole pool)."""

    def __init__(self, env: dict[str, str], concurrency: int, log: Path) -> None:
        self.log = log
        self.fh = log.open("ab")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "worker", "worker", f"--concurrency={concurrency}", "--without-mingle"],
            cwd=ROOT,
            env={**os.environ, **env},
            stdout=self.fh,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def wait_ready(self, timeout: float = 600.0) -> None:
        """Wait for the worker's own readiness line; the limit is for a hang, not a slow start
        (a busy machine took 80 s to start a worker): a worker that exits fails at once."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"worker exited: {self.log.read_text()[-2000:]}")
            if b" ready." in self.log.read_bytes():
                return
            time.sleep(0.2)
        raise TimeoutError(f"worker not ready: {self.log.read_text()[-2000:]}")

    def kill9(self) -> None:
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=30)

    def stop(self) -> None:
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
                self.proc.wait(timeout=30)
            except (subprocess.TimeoutExpired, ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)
        self.fh.close()


@pytest.fixture()
def start_worker(tmp_path: Path) -> Iterator[object]:
    """Factory: start a real `canary worker` process with the given env; all are stopped at teardown."""
    workers: list[WorkerProcess] = []

    def start(env: dict[str, str], concurrency: int = 2) -> WorkerProcess:
        worker = WorkerProcess(env, concurrency, tmp_path / f"worker-{len(workers)}.log")
        workers.append(worker)
        worker.wait_ready()
        return worker

    yield start
    for worker in workers:
        worker.stop()
