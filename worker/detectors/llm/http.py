"""One JSON POST to a model API, with retries, and every foreign error mapped at the boundary.

httpx errors and HTTP statuses never leave this module; they become the
detector errors the coordinator turns into invalid votes::

    DetectorError (worker.core.errors)
    ├── DetectorTimeoutError        read/write/pool timeout; a connect timeout once retries are spent
    ├── BackendError           kind ``unavailable``: an HTTP error status (408/429/5xx once retries
    │                          are spent, any other >= 400 at once), or a connection/protocol
    │                          error once retries are spent
    └── DetectorError          kind ``malformed``: a 2xx whose body is not a JSON object

Messages are structured and short (backend, path, status, attempts, the
provider's error *type*); they never carry a response or request body, so no
artifact text and no key ever reaches a vote or a log line.
"""

from __future__ import annotations

import contextlib
import email.utils
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import structlog

from worker.core.backoff import jittered_backoff
from worker.core.errors import DetectorError, DetectorTimeoutError
from worker.core.models import ErrorKind

log = structlog.get_logger(__name__)

_ERROR_TYPE = re.compile(r"[A-Za-z0-9_.:-]{1,64}")
RETRYABLE_TRANSPORT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.RemoteProtocolError, httpx.ReadError)


class BackendError(DetectorError):
    """The model API answered with an error status or could not be reached."""

    kind = ErrorKind.unavailable

    def __init__(
        self,
        message: str = "",
        kind: ErrorKind | str | None = None,
        status_code: int | None = None,
        attempts: int = 1,
    ) -> None:
        super().__init__(message, kind)
        self.status_code = status_code
        self.attempts = attempts


@dataclass(frozen=True)
class RetryPolicy:
    """Exponential backoff with jitter on 408/429/5xx and connection errors, honouring Retry-After.

    Attempt ``n`` (0-based) waits a uniform draw from ``[b/2, b]`` with
    ``b = min(backoff_max_s, backoff_s * 2**n)``, or the server's Retry-After
    when that is longer. A Retry-After beyond ``retry_after_max_s`` is not
    waited out: the call fails at once (the detector's vote is invalid).
    """

    retries: int = 3
    backoff_s: float = 0.5
    backoff_max_s: float = 8.0
    retry_after_max_s: float = 30.0

    def delay(self, attempt: int, retry_after: float | None = None) -> float:
        return max(jittered_backoff(attempt, self.backoff_s, self.backoff_max_s), retry_after or 0.0)


def retryable_status(status: int) -> bool:
    return status in (408, 429) or status >= 500


def parse_retry_after(headers: httpx.Headers, now: float | None = None) -> float | None:
    """Seconds to wait from ``retry-after-ms`` or ``Retry-After`` (seconds or HTTP date); None if absent."""
    millis = headers.get("retry-after-ms")
    if millis is not None:
        with contextlib.suppress(ValueError):
            return max(0.0, float(millis) / 1000)
    value = headers.get("retry-after")
    if value is None:
        return None
    with contextlib.suppress(ValueError):
        return max(0.0, float(value))
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def error_type(response: httpx.Response) -> str | None:
    """The provider's error type or code (``rate_limit_error``), never its message text."""
    try:
        data = response.json()
    except ValueError:
        return None
    error = data.get("error") if isinstance(data, dict) else None
    candidates = [error.get("type"), error.get("code")] if isinstance(error, dict) else []
    for value in candidates:
        if isinstance(value, str) and _ERROR_TYPE.fullmatch(value):
            return value
    return None


@contextlib.contextmanager
def map_http_errors(backend: str, path: str, attempts: int) -> Iterator[None]:
    """Translate httpx errors raised inside the block into detector errors."""
    try:
        yield
    except httpx.TimeoutException as exc:
        raise DetectorTimeoutError(
            f"{backend}: {type(exc).__name__} on {path} after {attempts} attempt(s)"
        ) from exc
    except httpx.HTTPError as exc:
        raise BackendError(
            f"{backend}: {type(exc).__name__} on {path} after {attempts} attempt(s)", attempts=attempts
        ) from exc


def post_json(
    client: httpx.Client,
    path: str,
    body: dict[str, Any],
    *,
    backend: str,
    retry: RetryPolicy,
    sleep: Callable[[float], None] = time.sleep,
) -> dict[str, Any]:
    """POST ``body`` and return the JSON object answered, retrying what is worth retrying."""
    attempt = 0
    while True:
        attempts = attempt + 1
        try:
            with map_http_errors(backend, path, attempts):
                response = client.post(path, json=body)
        except DetectorError as exc:
            cause = exc.__cause__
            if attempt < retry.retries and isinstance(cause, RETRYABLE_TRANSPORT):
                _pause(retry, attempt, None, backend, type(cause).__name__, sleep)
                attempt += 1
                continue
            raise
        if response.status_code >= 400:
            _check_status(response, retry, attempt, backend, path)
            _pause(retry, attempt, parse_retry_after(response.headers), backend, response.status_code, sleep)
            attempt += 1
            continue
        try:
            data = response.json()
        except ValueError:
            data = None
        if not isinstance(data, dict):
            raise DetectorError(
                f"{backend}: HTTP {response.status_code} from {path} is not a JSON object",
                ErrorKind.malformed,
            )
        return data


def _check_status(
    response: httpx.Response, retry: RetryPolicy, attempt: int, backend: str, path: str
) -> None:
    """Raise unless this error status is worth another attempt."""
    status = response.status_code
    attempts = attempt + 1
    kind = error_type(response)
    suffix = f" ({kind})" if kind else ""
    if not retryable_status(status) or attempt >= retry.retries:
        raise BackendError(
            f"{backend}: HTTP {status} from {path} after {attempts} attempt(s){suffix}",
            status_code=status,
            attempts=attempts,
        )
    retry_after = parse_retry_after(response.headers)
    if retry_after is not None and retry_after > retry.retry_after_max_s:
        raise BackendError(
            f"{backend}: HTTP {status} from {path}, Retry-After {retry_after:.0f}s exceeds "
            f"{retry.retry_after_max_s:.0f}s{suffix}",
            status_code=status,
            attempts=attempts,
        )


def _pause(
    retry: RetryPolicy,
    attempt: int,
    retry_after: float | None,
    backend: str,
    reason: int | str,
    sleep: Callable[[float], None],
) -> None:
    delay = retry.delay(attempt, retry_after)
    log.info("llm_retry", backend=backend, reason=reason, attempt=attempt + 1, delay_s=round(delay, 3))
    sleep(delay)
