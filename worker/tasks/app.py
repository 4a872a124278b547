"""The Celery app factory: crash-safe defaults, an eager mode for the embedded default."""

from __future__ import annotations

from typing import Any

from celery import Celery

from worker.settings import Settings


def create_app(settings: Settings, eager: bool | None = None) -> Celery:
    """Build the Celery app. ``eager`` runs the same task graph in-process."""
    eager = settings.embedded if eager is None else eager
    if eager:
        broker, backend = "memory://", "cache+memory://"
    else:
        broker, backend = settings.require_broker(), settings.backend_url()
    app = Celery(
        "canary", broker=broker, backend=backend, include=["worker.tasks.gate", "worker.tasks.fetch"]
    )
    app.conf.update(
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,
        task_soft_time_limit=settings.soft_time_limit_s,
        task_time_limit=settings.hard_time_limit_s,
        broker_transport_options={"visibility_timeout": settings.visibility_timeout},
        result_backend_transport_options={"visibility_timeout": settings.visibility_timeout},
        result_expires=settings.result_expires_s,
        task_serializer="json",
        result_serializer="json",
        accept_content=["json"],
        task_default_queue=settings.task_queue,
        task_routes={"canary.fetch": {"queue": settings.fetch_queue}},
        worker_send_task_events=settings.task_events,
        worker_disable_rate_limits=True,  # no task has a rate limit; skips the bucket bookkeeping
        broker_connection_retry_on_startup=True,
        worker_hijack_root_logger=False,
        beat_schedule={
            # A sweep message older than one interval is dropped, not run: sweeps queued while no
            # worker ran must not run back to back when one starts.
            "canary-sweep": {
                "task": "canary.sweep",
                "schedule": settings.sweep_interval_s,
                "options": {"expires": settings.sweep_interval_s},
            },
        },
        task_always_eager=eager,
        task_eager_propagates=eager,
    )
    app.canary_settings = settings
    from worker.adapters.compiled_cache import enable

    enable(settings.compiled_cache_dir)  # before any rule set compiles (preload, first scan)
    if not eager:
        from celery.signals import after_setup_logger, after_setup_task_logger, worker_init

        from worker.tasks.preload import on_worker_init, on_worker_start

        worker_init.connect(on_worker_start, weak=False, dispatch_uid="canary-blas-threads")
        if settings.preload:
            worker_init.connect(on_worker_init, weak=False, dispatch_uid="canary-preload")

        after_setup_logger.connect(_json_lines, weak=False, dispatch_uid="canary-json-logs")
        after_setup_task_logger.connect(_json_lines, weak=False, dispatch_uid="canary-json-task-logs")
        from worker.tasks.exporter import connect_worker_exporter

        connect_worker_exporter()  # the main process serves /metrics when CANARY_METRICS_PORT != 0
    import worker.tasks.fetch  # noqa: F401
    import worker.tasks.gate  # noqa: F401  (registers the shared tasks on this app)

    return app


def _json_lines(logger: Any = None, **_: Any) -> None:
    """Celery set up a logger: off a terminal, its lines become JSON objects (worker.logs)."""
    import sys

    from worker.logs import use_json_lines

    if logger is not None and not sys.stderr.isatty():
        use_json_lines(logger)
