"""Probes and launchers for the real services the integration tests use.

Plain functions, no pytest fixtures and no imports of Canary Gate itself, so a conftest, a test
or a script can use them alike. A probe answers with ``None`` when the service is reachable, or
with a one-line reason when it is not, so a CI failure says *why* and not just *that*.

``require(condition, reason)`` is the one policy: a missing service skips the test on a
developer's machine and fails it under ``CI=true``, where a skipped integration test would hide
a broken pipeline.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest

DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/15"
DEFAULT_DATABASE_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/canary_test"


def in_ci() -> bool:
    """True when running under CI (``CI=true``, as CI systems set it)."""
    return os.environ.get("CI", "").strip().lower() in {"1", "true", "yes"}


def require(condition: bool, reason: str) -> None:
    """Go on when ``condition`` holds; otherwise fail under CI and skip elsewhere."""
    if condition:
        return
    if in_ci():
        pytest.fail(f"required service missing under CI=true: {reason}", pytrace=False)
    pytest.skip(reason)


def redis_url() -> str:
    """The Redis URL the integration tests use (``CANARY_TEST_REDIS_URL``)."""
    return os.environ.get("CANARY_TEST_REDIS_URL", DEFAULT_REDIS_URL)


def database_url() -> str:
    """The Postgres URL the integration tests use (``CANARY_TEST_DATABASE_URL``, SQLAlchemy form)."""
    return os.environ.get("CANARY_TEST_DATABASE_URL", DEFAULT_DATABASE_URL)


def redact(url: str) -> str:
    """``url`` with any password replaced by ``***``, fit for a log line or a skip reason."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.rsplit("@", 1)[1]
    user = parts.username or ""
    return urlunsplit(parts._replace(netloc=f"{user}:***@{netloc}"))


def libpq_url(url: str) -> str:
    """A SQLAlchemy URL (``postgresql+psycopg://``) turned into one libpq accepts (``postgresql://``)."""
    scheme, sep, rest = url.partition("://")
    return f"{scheme.split('+', 1)[0]}{sep}{rest}"


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def check_port(host: str, port: int, timeout: float = 1.0) -> str | None:
    """None when a TCP connection to ``host:port`` succeeds, else why it did not."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return None
    except OSError as exc:
        return f"{host}:{port} refused a TCP connection ({exc})"


def check_redis(url: str, timeout: float = 2.0) -> str | None:
    """None when Redis at ``url`` answers PING, else why it did not."""
    try:
        import redis
    except ImportError:
        return "the redis package is not installed"
    client = redis.Redis.from_url(url, socket_timeout=timeout, socket_connect_timeout=timeout)
    try:
        if client.ping() is not True:
            return f"Redis at {redact(url)} gave an unexpected answer to PING"
        return None
    except redis.RedisError as exc:
        return f"Redis at {redact(url)} did not answer PING ({exc})"
    finally:
        client.close()


def check_postgres(url: str, timeout: int = 3) -> str | None:
    """None when Postgres at ``url`` answers ``select 1``, else why it did not."""
    try:
        import psycopg
    except ImportError:
        return "the psycopg package is not installed"
    try:
        with psycopg.connect(libpq_url(url), connect_timeout=timeout) as conn:
            row = conn.execute("select 1").fetchone()
    except psycopg.Error as exc:
        first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return f"Postgres at {redact(url)} did not answer ({first_line})"
    if row != (1,):
        return f"Postgres at {redact(url)} answered select 1 with {row!r}"
    return None


class ServerStartError(RuntimeError):
    """A helper server process exited or stayed silent instead of answering."""


def start_moto_server(port: int, timeout: float = 30.0) -> subprocess.Popen[bytes]:
    """Start moto's S3-protocol server on 127.0.0.1:``port`` and return once it answers HTTP.

    The caller owns the process: stop it with ``stop_process``. Output goes to a temporary log
    whose tail is quoted in the ``ServerStartError`` raised when the server dies or never answers;
    the log is unlinked once the server is up (the process keeps writing to it, so it never blocks
    on a full pipe, and nothing is left behind).
    """
    log = tempfile.NamedTemporaryFile(prefix=f"moto-{port}-", suffix=".log", delete=False)  # noqa: SIM115
    command = [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)]
    proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
    log.close()
    log_path = Path(log.name)
    endpoint = f"http://127.0.0.1:{port}/"
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise ServerStartError(f"moto server exited with {proc.returncode}: {_tail(log_path)}")
            if _answers_http(endpoint):
                return proc
            time.sleep(0.2)
        raise ServerStartError(
            f"moto server gave no answer on {endpoint} in {timeout:.0f}s: {_tail(log_path)}"
        )
    except BaseException:
        stop_process(proc)  # never leave a half-started server behind
        raise
    finally:
        log_path.unlink(missing_ok=True)


def stop_process(proc: subprocess.Popen[bytes], timeout: float = 10.0) -> None:
    """Terminate ``proc`` and wait for it, killing it if it ignores SIGTERM."""
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=timeout)


# Loopback probes must never go through an HTTP proxy taken from the environment.
_DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def _answers_http(url: str) -> bool:
    try:
        with _DIRECT.open(url, timeout=1.0):
            return True
    except urllib.error.HTTPError:
        return True  # any HTTP status means the server is up
    except OSError:
        return False


def _tail(path: Path, lines: int = 20) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return "(no log)"
    return "\n".join(text.splitlines()[-lines:]) or "(empty log)"


ROOT = Path(__file__).resolve().parents[2]


def run_canary(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """Run ``canary ARGS...`` in a subprocess with ``env`` over this process's environment."""
    return subprocess.run(
        [sys.executable, "-m", "worker", *args],
        cwd=ROOT,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )
