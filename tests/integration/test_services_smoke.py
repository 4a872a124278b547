"""The real services the integration suite leans on are there and behave as the gate expects.

Each test skips on a developer machine without the service and fails under ``CI=true``.
"""

from __future__ import annotations

import importlib.util
import socket
from collections.abc import Iterator

import pytest

from tests.integration import services

pytestmark = pytest.mark.integration


@pytest.fixture
def s3_endpoint() -> Iterator[str]:
    """An S3-protocol endpoint: a moto server on a free loopback port, stopped afterwards."""
    services.require(importlib.util.find_spec("moto") is not None, "moto[server] is not installed")
    services.require(importlib.util.find_spec("boto3") is not None, "boto3 is not installed")
    port = services.free_port()
    proc = services.start_moto_server(port)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        services.stop_process(proc)


def test_redis_answers_ping() -> None:
    """Redis at CANARY_TEST_REDIS_URL answers PING."""
    problem = services.check_redis(services.redis_url())
    services.require(problem is None, f"{problem}")


def test_postgres_answers_select_one() -> None:
    """Postgres at CANARY_TEST_DATABASE_URL answers `select 1`."""
    problem = services.check_postgres(services.database_url())
    services.require(problem is None, f"{problem}")


def test_s3_server_keeps_an_encrypted_object(s3_endpoint: str) -> None:
    """An object put with SSE AES256 into a new bucket reads back byte for byte, still marked encrypted."""
    import boto3

    s3 = boto3.client(
        "s3",
        endpoint_url=s3_endpoint,
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
    body = b"quarantined artifact \x00\xff bytes"
    s3.create_bucket(Bucket="canary-quarantine")
    s3.put_object(Bucket="canary-quarantine", Key="sha256/ab/cd", Body=body, ServerSideEncryption="AES256")

    got = s3.get_object(Bucket="canary-quarantine", Key="sha256/ab/cd")

    assert got["Body"].read() == body
    assert got["ServerSideEncryption"] == "AES256"


def test_require_fails_under_ci_and_skips_elsewhere(monkeypatch: pytest.MonkeyPatch) -> None:
    """A missing service is a skip on a laptop but a failure when CI=true."""
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="under CI=true: no such service"):
        services.require(False, "no such service")
    monkeypatch.delenv("CI")
    with pytest.raises(pytest.skip.Exception, match="no such service"):
        services.require(False, "no such service")
    services.require(True, "never raised")


def test_moto_server_on_a_taken_port_fails_loudly() -> None:
    """Starting moto on a port already in use raises ServerStartError quoting the server's own log."""
    services.require(importlib.util.find_spec("moto") is not None, "moto[server] is not installed")
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(services.ServerStartError, match="moto server exited"):
            services.start_moto_server(port, timeout=30)
