"""HTTP tests: a real uvicorn server on loopback serving the intake app."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.web.live import TOKEN, LiveServer
from worker.settings import Settings
from worker.web.intake import create_intake_app


@pytest.fixture()
def serve() -> Iterator[Callable[[Settings], LiveServer]]:
    """Factory: serve the intake app for ``settings`` on loopback; stopped at teardown."""
    servers: list[LiveServer] = []

    def start(settings: Settings) -> LiveServer:
        server = LiveServer(create_intake_app(settings))
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


@pytest.fixture()
def embedded_settings(tmp_path: Path) -> Settings:
    """Embedded default (SQLite, folders) with one API token and a 1 MiB body limit."""
    return Settings(data_dir=tmp_path / "canary", api_tokens=TOKEN, max_request_bytes=1024 * 1024)
