"""Warm-up before the prefork pool forks: compiled rule sets and local models are shared copy-on-write."""

from __future__ import annotations

import hashlib
import time
from typing import Any

import structlog

from worker.detectors import NETWORK_KINDS, detector_for

log = structlog.get_logger("canary.preload")


def preload() -> dict[str, float]:
    """Compile every shipped policy's rule sets and load its local detectors; returns ms per policy."""
    from policies import available_policies, load_policy
    from worker.core.detector import Artifact
    from worker.core.precheck import run_precheck

    sample = b"warm-up artifact"
    artifact = Artifact(sha256=hashlib.sha256(sample).hexdigest(), data=sample)
    took: dict[str, float] = {}
    for ref in available_policies():
        started = time.perf_counter()
        policy = load_policy(ref)
        run_precheck(sample, policy)
        for spec in policy.quorum.detectors:
            if spec.kind in NETWORK_KINDS:
                continue
            try:
                detector_for(policy, spec).answer(artifact, policy)
            except Exception as exc:  # noqa: BLE001 - a broken detector votes invalid later; start anyway
                log.warning("preload_failed", policy=ref, detector=spec.name, error=type(exc).__name__)
        took[ref] = round((time.perf_counter() - started) * 1000, 1)
    log.info("preloaded", **took)
    return took


def on_worker_init(sender: Any = None, **_: Any) -> None:
    settings = getattr(getattr(sender, "app", None), "canary_settings", None)
    if settings is not None and settings.use_s3:
        from worker.adapters.storage import warm_s3_client

        warm_s3_client()
    preload()
    warm_imports()


def one_blas_thread() -> None:
    """One BLAS thread per process (numpy's matrix products: the models' heads). Called in the
    worker's main process before the pool forks, so every child inherits it.

    A worker runs a process per core, and the models' matrices are small. Unlimited, each
    process ran a BLAS thread per core: two processes on two cores fought for them, and the
    prompt-injection ensemble did 10.1 artifacts/s where one thread each does 17.7-18.0; one
    process alone gained no wall time from its second thread (9.1/s against 9.8) and spent
    twice the CPU (``benchmarks/bench_ensemble.py``). The reader's onnxruntime session has
    one thread already."""
    from threadpoolctl import threadpool_limits

    threadpool_limits(1, user_api="blas")


def on_worker_start(sender: Any = None, **_: Any) -> None:
    """``worker_init`` receiver (main process, before the fork)."""
    one_blas_thread()


def warm_imports() -> None:
    """Import what each pool process's runtime needs (boto3 alone takes 1-2 s on a loaded host)
    before the fork: a detect task whose soft limit is its detectors' budget must not spend it
    importing libraries when it is the first task of a fresh pool process."""
    import importlib

    for name in (
        "boto3",
        "botocore.client",
        "redis",
        "prometheus_client.multiprocess",
        "sqlalchemy.dialects.postgresql",
    ):
        try:
            importlib.import_module(name)
        except ImportError:
            continue
