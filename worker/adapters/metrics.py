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

``canary metrics`` (``worker.cli.ops``) serves them alone; a Celery worker's main process
serves them when ``CANARY_METRICS_PORT`` is set (``worker.tasks.exporter``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import structlog

from worker.adapters.db import GateRepo, GateStatus

if TYPE_CHECKING:
    from prometheus_client.registry import CollectorRegistry
    from sqlalchemy.engine import Engine

    from worker.settings import Settings

log = structlog.get_logger("canary.metrics")

DEFAULT_PORT = 9808
STATUSES = tuple(GateStatus)


class GateCollector:
    """Reads gate counts from the database on each ``collect()``. Never raises into the scrape."""

    def __init__(self, engine: Engine, now: Callable[[], datetime] = lambda: datetime.now(UTC)) -> None:
        self.repo = GateRepo(engine)
        self.now = now
        self._schema_ready = False

    def read(self) -> dict[str, Any]:
        """One snapshot of the gate table (a handful of aggregate queries)."""
        if not self._schema_ready:  # like every component: a fresh database gets its (empty) tables
            self.repo.create_tables()
            self._schema_ready = True
        now = self.now()
        snap = self.repo.snapshot(now)
        snap["oldest_by_policy"] = self.repo.oldest_open_by_policy(now)
        return snap

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
    from worker.adapters.db import make_reader_engine

    return make_reader_engine(url)


def start_exporter(settings: Settings, port: int | None = None, addr: str | None = None) -> CollectorRegistry:
    """Serve the gate metrics over HTTP in a daemon thread; returns the registry served.

    Bound to ``addr``, else ``CANARY_METRICS_ADDR`` (default 127.0.0.1: the exporter has no
    authentication, so it is reachable from elsewhere only when told)."""
    from prometheus_client import start_http_server

    registry = settings_registry(settings)
    start_http_server(
        port or settings.metrics_port or DEFAULT_PORT, addr=addr or settings.metrics_addr, registry=registry
    )
    return registry
