"""A polite HTTP transport for the registries: few requests at a time per host, rate-limited, retried.

Registries are shared services: a nightly batch must not open a hundred connections to one
host, and a 429 or a 503 is a request to slow down, not a verdict on the release. The transport
wraps httpx's own (``httpx.HTTPTransport``; tests inject another) and, per process:

- holds at most ``per_host`` requests in flight to one host, and starts at most ``rate`` of
  them per second on average (a token bucket holding ``burst``: a fetch's three requests in a
  row do not wait, a sustained stream is held to the rate). The bounds are per process: a worker
  with N pool processes sends at most N x ``per_host`` at once and N x ``rate`` per second;
- retries connection errors and 429/502/503/504 up to ``retries`` times, sleeping an
  exponential backoff with jitter (``backoff_s * 2**n``, at most ``backoff_max_s``) or the
  server's ``Retry-After`` when that is longer (capped at ``backoff_max_s`` too).

Each answer is read whole inside its slot, so the slot bounds the download, not just the headers.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import httpx

from worker.core.backoff import jittered_backoff

RETRYABLE_STATUS = frozenset({429, 502, 503, 504})


@dataclass(frozen=True)
class Politeness:
    per_host: int = 4
    rate: float = 20.0  # requests per second per host, on average; 0: no limit
    burst: int = 10
    retries: int = 3
    backoff_s: float = 0.5
    backoff_max_s: float = 8.0

    def delay(self, attempt: int, retry_after: float | None = None) -> float:
        wait = jittered_backoff(attempt, self.backoff_s, self.backoff_max_s)
        return min(self.backoff_max_s, max(wait, retry_after or 0.0))


class _Host:
    def __init__(self, politeness: Politeness) -> None:
        self.slots = threading.BoundedSemaphore(politeness.per_host)
        self.lock = threading.Lock()
        self.rate, self.burst = politeness.rate, float(politeness.burst)
        self.tokens, self.stamp = self.burst, time.monotonic()

    def wait_s(self) -> float:
        """Take a token: how long to wait for it (tokens go negative: later callers queue)."""
        if self.rate <= 0:
            return 0.0
        with self.lock:
            now = time.monotonic()
            self.tokens = min(self.burst, self.tokens + (now - self.stamp) * self.rate)
            self.stamp = now
            self.tokens -= 1
            return 0.0 if self.tokens >= 0 else -self.tokens / self.rate


class PoliteTransport(httpx.BaseTransport):
    """httpx transport: per-host concurrency and rate, retries with backoff (module docstring)."""

    def __init__(
        self,
        politeness: Politeness | None = None,
        inner: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.politeness = politeness or Politeness()
        self.inner = inner or httpx.HTTPTransport()
        self.sleep = sleep
        self.hosts: dict[str, _Host] = {}
        self.lock = threading.Lock()

    def _host(self, name: str) -> _Host:
        with self.lock:
            if name not in self.hosts:
                self.hosts[name] = _Host(self.politeness)
            return self.hosts[name]

    def _send(self, host: _Host, request: httpx.Request) -> httpx.Response:
        with host.slots:
            wait = host.wait_s()
            if wait > 0:
                self.sleep(wait)
            response = self.inner.handle_request(request)
            try:
                response.read()
            except BaseException:
                response.close()
                raise
            return response

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        host = self._host(request.url.host)
        attempt = 0
        while True:
            try:
                response = self._send(host, request)
            except httpx.TransportError:
                if attempt >= self.politeness.retries:
                    raise
                self.sleep(self.politeness.delay(attempt))
                attempt += 1
                continue
            if response.status_code not in RETRYABLE_STATUS or attempt >= self.politeness.retries:
                return response
            self.sleep(self.politeness.delay(attempt, _retry_after(response)))
            attempt += 1

    def close(self) -> None:
        self.inner.close()


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("retry-after", "")
    try:
        return max(0.0, float(value))
    except ValueError:
        return None  # an HTTP date or nothing: the backoff alone


def polite_client(politeness: Politeness | None = None, timeout: float = 60.0) -> httpx.Client:
    """The registries' client: keep-alive, redirects followed, the polite transport; the proxies
    of the environment (``HTTPS_PROXY``, ``NO_PROXY``...) kept, as httpx's own client keeps them."""
    from httpx._utils import get_environment_proxies  # what httpx.Client(trust_env=True) reads

    shared = PoliteTransport(politeness)
    mounts: dict[str, httpx.BaseTransport | None] = {
        pattern: PoliteTransport(politeness, httpx.HTTPTransport(proxy=url)) if url else shared
        for pattern, url in get_environment_proxies().items()
    }
    return httpx.Client(transport=shared, mounts=mounts, timeout=timeout, follow_redirects=True)
