"""Prometheus metrics read from the gate database at scrape time.

A custom collector queries the gate rows on every scrape instead of counting
in-process, so the numbers are right however many worker processes (or hosts)
share the database, and survive restarts:

    canary_gates{status}                       gates per status (pending, running, allow, quarantine, review)
    canary_gates_open_oldest_age_seconds       age of the oldest pending/running gate (0 when none)
    canary_gates_overdue                       pending/running gates past their deadline
    canary_gate_attempts_max_open              most attempts of any pending/running gate
    canary_decisions_total{policy,decision}    decided gates per policy and decision (a counter)
    canary_oldest_open_gate_seconds{policy}    age of the oldest pending/running gate per policy
    canary_gates_awaiting_person{queue}        gates waiting for a reviewer: in review, or
                                               quarantined and not yet reviewed (``canary review``)
    canary_gate_database_up                    1 when the last scrape could read the database

The per-stage histograms and detector error counts come from ``worker.adapters.stage_metrics``
(prometheus_client multiprocess files). Every exporter reports the same database-wide values: with several worker
replicas scraped, aggregate with ``max`` (not ``sum``).

``canary metrics`` serves them alone; a Celery worker's main process serves
them when ``CANARY_METRICS_PORT`` is set (see :func:`connect_worker_exporter`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import structlog
import typer

if TYPE_CHECKING:
    from prometheus_client.registry import CollectorRegistry
    from sqlalchemy.engine import Engine

    from worker.settings import Settings

log = structlog.get_logger("canary.metrics")

DEFAULT_PORT = 9808
STATUSES = ("pending", "running", "allow", "quarantine", "review")
OPEN_STATUSES = ("pending", "running")


def _aware(value: Any) -> datetime | None:
    """A database timestamp as an aware UTC datetime (SQLite may hand back strings or naive values)."""
    if value is None:
        return None
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    if not isinstance(value, datetime):
        return None
    return value if value.tzinfo else value.replace(tzinfo=UTC)


class GateCollector:
    """Reads gate counts from the database on each ``collect()``. Never raises into the scrape."""

    def __init__(self, engine: Engine, now: Callable[[], datetime] = lambda: datetime.now(UTC)) -> None:
        self.engine = engine
        self.now = now
        self._schema_ready = False

    def read(self) -> dict[str, Any]:
        """One snapshot of the gate table (a handful of aggregate queries)."""
        from sqlalchemy import func, select

        from worker.adapters.db import Gate, not_reviewed

        if not self._schema_ready:  # like every component: a fresh database gets its (empty) tables
            Gate.metadata.create_all(self.engine)
            self._schema_ready = True
        table = Gate.__table__  # type: ignore[attr-defined]
        is_open = table.c.status.in_(OPEN_STATUSES)
        now = self.now()
        with self.engine.connect() as conn:
            statuses = conn.execute(select(table.c.status, func.count()).group_by(table.c.status)).all()
            oldest, attempts = conn.execute(
                select(func.min(table.c.created_at), func.max(table.c.attempts)).where(is_open)
            ).one()
            late = conn.execute(select(func.count()).where(is_open, table.c.deadline < now)).scalar_one()
            unreviewed = conn.execute(
                select(func.count()).where(table.c.status == "quarantine", not_reviewed())
            ).scalar_one()
            oldest_by_policy = conn.execute(
                select(table.c.policy_id, func.min(table.c.created_at))
                .where(is_open)
                .group_by(table.c.policy_id)
            ).all()
            decisions = conn.execute(
                select(table.c.policy_id, table.c.decision, func.count())
                .where(table.c.decision.is_not(None))
                .group_by(table.c.policy_id, table.c.decision)
            ).all()
        started = _aware(oldest)
        return {
            "statuses": {str(status): int(n) for status, n in statuses},
            "oldest_age_s": max(0.0, (now - started).total_seconds()) if started else 0.0,
            "overdue": int(late or 0),
            "attempts_max_open": int(attempts or 0),
            "decisions": [(str(p), str(d), int(n)) for p, d, n in decisions],
            "oldest_by_policy": {
                str(p): max(0.0, (now - at).total_seconds())
                for p, t in oldest_by_policy
                if (at := _aware(t)) is not None
            },
            "unreviewed_quarantine": int(unreviewed or 0),
        }

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import GaugeMetricFamily

        up = GaugeMetricFamily("canary_gate_database_up", "1 when the gate database could be read")
        try:
            snap = self.read()
        except Exception as exc:  # noqa: BLE001 - a scrape must answer even when the database does not
            log.warning("metrics_database_unreadable", error=type(exc).__name__, detail=str(exc)[:300])
            up.add_metric([], 0)
            yield up
            return
        up.add_metric([], 1)
        yield up
        gates = GaugeMetricFamily("canary_gates", "Gates per status", labels=["status"])
        for status in sorted(set(STATUSES) | set(snap["statuses"])):
            gates.add_metric([status], snap["statuses"].get(status, 0))
        yield gates
        yield GaugeMetricFamily(
            "canary_gates_open_oldest_age_seconds",
            "Age of the oldest pending or running gate (0 when none)",
            value=snap["oldest_age_s"],
        )
        yield GaugeMetricFamily(
            "canary_gates_overdue", "Pending or running gates past their deadline", value=snap["overdue"]
        )
        yield GaugeMetricFamily(
            "canary_gate_attempts_max_open",
            "Most attempts of any pending or running gate",
            value=snap["attempts_max_open"],
        )
        yield from _named_families(snap)
        awaiting = GaugeMetricFamily(
            "canary_gates_awaiting_person",
            "Gates waiting for a reviewer: in review, or quarantined and not yet reviewed",
            labels=["queue"],
        )
        awaiting.add_metric(["review"], snap["statuses"].get("review", 0))
        awaiting.add_metric(["quarantine"], snap["unreviewed_quarantine"])
        yield awaiting


def _named_families(snap: dict[str, Any]) -> Iterator[Any]:
    """The names operators alert on (infra/prometheus-alerts.yml): decisions as a counter, the
    oldest open gate per policy."""
    from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

    total = CounterMetricFamily(
        "canary_decisions", "Decided gates per policy and decision (a reviewer's change moves one)",
        labels=["policy", "decision"],
    )  # fmt: skip
    for policy, decision, count in snap["decisions"]:
        total.add_metric([policy, decision], count)
    yield total
    oldest = GaugeMetricFamily(
        "canary_oldest_open_gate_seconds",
        "Age of the oldest pending or running gate per policy",
        labels=["policy"],
    )
    policies = {policy for policy, _, _ in snap["decisions"]} | set(snap["oldest_by_policy"])
    for policy in sorted(policies):  # 0 for a policy with no open gate: the series exists
        oldest.add_metric([policy], snap["oldest_by_policy"].get(policy, 0.0))
    yield oldest


def gate_registry(engine: Engine, stage_folder: Path | None = None) -> CollectorRegistry:
    """A registry holding the gate collector and, when given, the stage metrics every process
    wrote to ``stage_folder`` (no process/platform metrics of this process)."""
    from prometheus_client import CollectorRegistry

    from worker.adapters.stage_metrics import multiprocess_collector

    registry = CollectorRegistry(auto_describe=False)
    registry.register(GateCollector(engine))
    if stage_folder is not None:
        multiprocess_collector(registry, stage_folder)
    return registry


def settings_registry(settings: Settings) -> CollectorRegistry:
    from worker.adapters.stage_metrics import metrics_folder

    stage_folder = metrics_folder(settings) if settings.stage_metrics else None
    return gate_registry(reader_engine(settings.sqlalchemy_url), stage_folder)


def reader_engine(url: str) -> Engine:
    """A lazily connecting engine for scrapes: a database that is down at start-up is no error."""
    from sqlalchemy import create_engine

    if url.startswith("sqlite"):
        return create_engine(url, connect_args={"check_same_thread": False, "timeout": 5})
    return create_engine(url, pool_pre_ping=True, pool_size=1, max_overflow=1)


def start_exporter(settings: Settings, port: int | None = None, addr: str | None = None) -> CollectorRegistry:
    """Serve the gate metrics over HTTP in a daemon thread (on ``CANARY_METRICS_ADDR``, 127.0.0.1
    unless told otherwise); returns the registry served."""
    from prometheus_client import start_http_server

    registry = settings_registry(settings)
    start_http_server(
        port or settings.metrics_port or DEFAULT_PORT, addr=addr or settings.metrics_addr, registry=registry
    )
    return registry


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


def metrics_command(
    port: Annotated[
        int | None,
        typer.Option(help=f"Port to serve /metrics on [default: CANARY_METRICS_PORT or {DEFAULT_PORT}]."),
    ] = None,
    addr: Annotated[
        str | None, typer.Option(help="Address to bind [default: CANARY_METRICS_ADDR or 127.0.0.1].")
    ] = None,
    once: Annotated[bool, typer.Option("--once", help="Print the metrics once to stdout and exit.")] = False,
) -> None:
    """Serve the gate metrics (read from the gate database) for Prometheus."""
    import threading

    from pydantic import ValidationError

    from worker.settings import Settings

    try:
        settings = Settings()
    except ValidationError as exc:
        typer.echo(f"canary: invalid settings: {exc.errors()[0]['msg']}", err=True)
        raise typer.Exit(2) from None
    if once:
        from prometheus_client import generate_latest

        typer.echo(generate_latest(settings_registry(settings)).decode(), nl=False)
        return
    chosen = port or settings.metrics_port or DEFAULT_PORT
    try:
        start_exporter(settings, chosen, addr)
    except OSError as exc:
        typer.echo(
            f"canary: cannot serve metrics on {addr or settings.metrics_addr}:{chosen}: {exc}", err=True
        )
        raise typer.Exit(1) from None
    typer.echo(f"serving gate metrics on http://{addr or settings.metrics_addr}:{chosen}/metrics", err=True)
    threading.Event().wait()
