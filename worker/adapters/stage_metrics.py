"""Per-stage latency and detector errors, counted in every process that runs a gate step.

    canary_stage_seconds{stage}                  histogram; stage: intake, precheck, detect, decide, publish
    canary_detector_errors_total{detector,kind}  invalid votes (timeout, crash, off-protocol, ...)

Safe with several worker processes: prometheus_client's multiprocess mode. Each process writes its
values to memory-mapped files in one folder (``CANARY_METRICS_DIR``, default
``$CANARY_DATA_DIR/metrics``); the exporter (``canary metrics`` or a worker's main process) adds
them up at scrape time. Counters and histograms are summed over every file, including those of
processes that have exited, so totals survive restarts; one folder per host (or volume).

Nothing here may fail a gate: when the folder cannot be used, nothing is counted.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import structlog

log = structlog.get_logger("canary.metrics")

STAGES = ("intake", "precheck", "detect", "decide", "publish")
BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0)

_LOCK = threading.Lock()
_metrics: dict[str, Any] = {}
_folder: Path | None = None


def metrics_folder(settings: Any) -> Path:
    chosen = getattr(settings, "metrics_dir", None)
    return Path(chosen) if chosen else Path(settings.data_dir) / "metrics"


def enable(folder: Path) -> bool:
    """Count into ``folder`` from now on in this process (idempotent). False when it cannot."""
    global _folder
    with _LOCK:
        if _folder is not None:
            return _folder == folder
        try:
            folder.mkdir(parents=True, exist_ok=True)
            os.environ["PROMETHEUS_MULTIPROC_DIR"] = str(folder)
            from prometheus_client import Counter, Histogram, values

            # prometheus_client picks its value class at import; a process that imported it
            # before the folder was known switches now, before any of these metrics exists.
            values.ValueClass = values.MultiProcessValue()  # type: ignore[no-untyped-call]
            registry = None  # not registered in the default registry: the exporter reads the files
            _metrics["stage"] = Histogram(
                "canary_stage_seconds",
                "Seconds per gate stage",
                ["stage"],
                buckets=BUCKETS,
                registry=registry,
            )
            _metrics["errors"] = Counter(
                "canary_detector_errors",
                "Invalid detector votes by kind",
                ["detector", "kind"],
                registry=registry,
            )
        except Exception as exc:  # noqa: BLE001 - metrics never stop the gate
            log.warning("stage_metrics_disabled", folder=str(folder), error=type(exc).__name__)
            return False
        _folder = folder
        return True


def observe(stage: str, seconds: float, count: int = 1) -> None:
    """Record ``count`` items of ``stage`` that took ``seconds`` each."""
    histogram = _metrics.get("stage")
    if histogram is None:
        return
    try:
        child = histogram.labels(stage=stage)
        for _ in range(count):
            child.observe(max(0.0, seconds))
    except Exception:  # noqa: BLE001
        return


def detector_error(detector: str, kind: str) -> None:
    counter = _metrics.get("errors")
    if counter is not None:
        try:
            counter.labels(detector=detector, kind=kind).inc()
        except Exception:  # noqa: BLE001
            return


def multiprocess_collector(registry: Any, folder: Path) -> None:
    """Add the values every process wrote to ``folder`` to ``registry`` (when the folder exists)."""
    if not folder.is_dir():
        return
    from prometheus_client import multiprocess

    multiprocess.MultiProcessCollector(registry, path=str(folder))  # type: ignore[no-untyped-call]


_seen_detectors: set[str] = set()


def record_votes(detector: str, votes: Any) -> None:
    """A detect stage's votes: each one's latency, and its error kind when it is invalid.

    A detector's error series start at 0 the first time it votes here, so ``rate()`` and the
    alert rules see a series before the first error, not only after it."""
    counter = _metrics.get("errors")
    if counter is not None and detector not in _seen_detectors:
        from worker.core.models import ErrorKind

        _seen_detectors.add(detector)
        for kind in ErrorKind:
            counter.labels(detector=detector, kind=kind.value)
    for vote in votes:
        observe("detect", float(getattr(vote, "latency_ms", 0.0)) / 1000)
        error = getattr(vote, "error", None)
        if error is not None:
            detector_error(detector, str(getattr(error, "value", error)))
