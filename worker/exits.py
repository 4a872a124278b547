"""The ``canary`` exit codes, and foreign errors translated to them at the command line's edge.

====  ==========================================================================================
0     everything given was gated and allowed
1     something was quarantined or sent to review (``scan``); a gate is unknown (``status``)
2     configuration or usage: bad option, settings, policy (unknown detector kind, bad options,
      a rule set that does not compile), ``CANARY_DATABASE_URL`` not a database URL, an
      unreadable input (the rest was gated)
3     infrastructure: the database, the object store or the broker did not answer; ``submit``
      names the inputs it did not gate (run it again once the service is back: intake is
      idempotent)
130   interrupted
====  ==========================================================================================

No traceback reaches the terminal for 2 or 3: one line, ``canary: ...``.
"""

from __future__ import annotations

EXIT_BLOCKED = 1
EXIT_CONFIG = 2
EXIT_INFRASTRUCTURE = 3


def exit_code_for(exc: BaseException) -> int | None:
    """2 for a configuration mistake, 3 for a service that failed, None for anything else (a bug)."""
    from worker.adapters.db.engine import driver_error_kind
    from worker.core.errors import ConfigError, DatabaseError, StorageError

    chain = [exc]
    while chain[-1].__cause__ is not None and len(chain) < 8:  # a translated error keeps its cause
        chain.append(chain[-1].__cause__)
    if any(isinstance(e, ConfigError) or driver_error_kind(e) == "config" for e in chain):
        return EXIT_CONFIG
    if isinstance(exc, StorageError | DatabaseError | ConnectionError | TimeoutError):
        return EXIT_INFRASTRUCTURE
    if driver_error_kind(exc) == "service":
        return EXIT_INFRASTRUCTURE
    return EXIT_INFRASTRUCTURE if _is_service_error(exc) else None


def _is_service_error(exc: BaseException) -> bool:
    """Broker and S3 client failures (kombu, redis, botocore), recognised without importing them."""
    for cls in type(exc).__mro__:
        module = cls.__module__.split(".", 1)[0]
        if module in {"kombu", "redis", "amqp"} and cls.__name__ in {
            "OperationalError",
            "ConnectionError",
            "TimeoutError",
        }:
            return True
        if module == "botocore" and cls.__name__ in {
            "EndpointConnectionError",
            "ClientError",
            "BotoCoreError",
        }:
            return True
    return False


def describe(exc: BaseException) -> str:
    """One line naming what failed: the kind of error and its first line (no credentials in URLs)."""
    import re

    first = next((line.strip() for line in str(exc).splitlines() if line.strip()), "")
    first = re.sub(r"://([^:/@\s]+):[^@/\s]+@", r"://\1:***@", first)  # passwords in URLs
    kind = "configuration" if exit_code_for(exc) == EXIT_CONFIG else "infrastructure"
    return (
        f"{kind} error: {type(exc).__name__}: {first[:300]}"
        if first
        else f"{kind} error: {type(exc).__name__}"
    )
