"""Defaults that keep data in: the metrics exporter on loopback, artifacts stored encrypted."""

from __future__ import annotations

from typing import Any

import pytest

from worker.pipeline.intake import submit_artifact
from worker.settings import Settings


@pytest.fixture()
def bound(monkeypatch) -> list[str]:
    """The addresses the metrics exporter was asked to bind (nothing is actually served)."""
    import prometheus_client

    seen: list[str] = []
    monkeypatch.setattr(
        prometheus_client, "start_http_server", lambda port, addr, registry: seen.append(addr)
    )
    return seen


def test_the_metrics_exporter_binds_loopback_by_default(bound, tmp_path):
    """With no address given, the worker's exporter listens on 127.0.0.1 only (it has no auth)."""
    from worker.adapters.metrics import start_exporter

    start_exporter(Settings(data_dir=tmp_path, metrics_port=9808))
    assert bound == ["127.0.0.1"]


def test_the_metrics_exporter_binds_where_it_is_told(bound, tmp_path):
    """CANARY_METRICS_ADDR (or an explicit address) opens it to other hosts on purpose."""
    from worker.adapters.metrics import start_exporter

    start_exporter(Settings(data_dir=tmp_path, metrics_port=9808, metrics_addr="0.0.0.0"))
    start_exporter(Settings(data_dir=tmp_path), 9809, "10.0.0.7")
    assert bound == ["0.0.0.0", "10.0.0.7"]


def test_artifacts_are_stored_with_server_side_encryption(gate, fixture_policy):
    """Intake asks the store to encrypt the artifact bytes, as quarantine does."""
    puts: list[tuple[str, bool]] = []
    store = gate.rt.store
    original = store.put

    def put(key: str, data: bytes, **kwargs: Any) -> None:
        puts.append((key, bool(kwargs.get("encrypt"))))
        original(key, data, **kwargs)

    store.put = put  # type: ignore[method-assign]
    submit_artifact(gate.rt, b"stored encrypted", [fixture_policy("trivial")], enqueue=lambda _gid: None)
    assert puts and all(encrypted for _, encrypted in puts)
