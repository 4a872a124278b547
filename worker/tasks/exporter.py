"""The Celery worker's metrics exporter: its main process serves ``/metrics`` (the collector is
``worker.adapters.metrics``) when ``CANARY_METRICS_PORT`` is set."""

from __future__ import annotations

from typing import Any

import structlog

from worker.adapters.metrics import start_exporter

log = structlog.get_logger("canary.metrics")


def _on_worker_init(sender: Any = None, **_: Any) -> None:
    """``worker_init`` receiver: the worker's main process serves metrics when a port is set."""
    settings = getattr(getattr(sender, "app", None), "canary_settings", None)
    if settings is None or not settings.metrics_port:
        return
    try:
        start_exporter(settings)
    except OSError as exc:  # the port is taken: the worker still works, without metrics
        log.error("metrics_exporter_failed", port=settings.metrics_port, error=str(exc))
        return
    log.info("metrics_exporter_started", port=settings.metrics_port)


def connect_worker_exporter() -> None:
    """Hook Celery's ``worker_init`` (main process only, before the pool forks). Idempotent."""
    from celery.signals import worker_init

    worker_init.connect(_on_worker_init, weak=False, dispatch_uid="canary-metrics-exporter")
