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


class JsonLineFormatter(logging.Formatter):
    """Every record as one JSON object on one line: a structlog event (already JSON) keeps its
    fields; any other record (Celery's own, a library's) becomes ``{"event": message, ...}``.
    Time, level, logger and process name are added, so a worker's log is valid JSON lines
    (Celery's ``[time: LEVEL/Process]`` text prefix would make every line invalid)."""

    def format(self, record: logging.LogRecord) -> str:
        import json

        message = record.getMessage()
        fields: dict[str, object] = {}
        if message.startswith("{"):
            try:
                parsed = json.loads(message)
                fields = parsed if isinstance(parsed, dict) else {}
            except ValueError:
                fields = {}
        if not fields:
            fields = {"event": message}
        fields.setdefault("level", record.levelname.lower())
        fields.setdefault("logger", record.name)
        fields["timestamp"] = self.formatTime(record, "%Y-%m-%dT%H:%M:%S") + f".{int(record.msecs):03d}Z"
        fields["process"] = record.processName
        if record.exc_info:
            fields["exception"] = self.formatException(record.exc_info)
        return json.dumps(fields, default=str)


def use_json_lines(logger: logging.Logger) -> None:
    """Give every handler of ``logger`` the JSON-lines formatter (times in UTC)."""
    import time

    formatter = JsonLineFormatter()
    formatter.converter = time.gmtime
    for handler in logger.handlers:
        handler.setFormatter(formatter)


def capture_warnings_as_json() -> None:
    """Route ``warnings`` through logging, printed by a JSON-lines handler of their own."""
    logging.captureWarnings(True)
    logger = logging.getLogger("py.warnings")
    if not logger.handlers:
        logger.addHandler(logging.StreamHandler(sys.stderr))
        logger.propagate = False
    use_json_lines(logger)
