"""structlog set-up: JSON when not on a terminal, console otherwise. Never log artifact text."""

from __future__ import annotations

import logging
import sys

import structlog


def configure_logging(level: int = logging.INFO, json_logs: bool | None = None) -> None:
    json_logs = (not sys.stderr.isatty()) if json_logs is None else json_logs
    renderer: structlog.typing.Processor = (
        structlog.processors.JSONRenderer() if json_logs else structlog.dev.ConsoleRenderer()
    )
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso"),
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(level),
        # resolve sys.stderr per logger, so a swapped stream (tests, daemonisation) is never stale
        logger_factory=lambda *_: structlog.PrintLogger(sys.stderr),
        cache_logger_on_first_use=False,
    )
