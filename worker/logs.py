"""structlog set-up: JSON when not on a terminal, console otherwise. Never log artifact text."""

from __future__ import annotations

import logging
import sys

import structlog


def configure_logging(level: int = logging.INFO, json_logs: bool | None = None, stdlib: bool = False) -> None:
    """Render events as JSON (not a terminal) or for the console.

    ``stdlib``: hand each rendered event to the standard ``logging`` logger of its name instead
    of printing it. The Celery worker uses this, so an event reaches Celery's handlers at its
    own level (``[… INFO/ForkPoolWorker-1] {"event": "gate_decided", …}``) rather than through
    the redirected stderr, which Celery logs as WARNING.
    """
    json_logs = (stdlib or not sys.stderr.isatty()) if json_logs is None else json_logs
    renderer: structlog.typing.Processor = (
        structlog.processors.JSONRenderer() if json_logs else structlog.dev.ConsoleRenderer()
    )
    processors: list[structlog.typing.Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
    ]
    if not stdlib:  # a logging handler stamps its own time
        processors.append(structlog.processors.TimeStamper(fmt="iso"))
    structlog.configure(
        processors=[*processors, renderer],
        wrapper_class=structlog.make_filtering_bound_logger(level),
        logger_factory=(
            structlog.stdlib.LoggerFactory()
            if stdlib
            # resolve sys.stderr per logger, so a swapped stream (tests, daemonisation) is never stale
            else lambda *_: structlog.PrintLogger(sys.stderr)
        ),
        cache_logger_on_first_use=False,
    )
