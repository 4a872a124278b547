"""A real uvicorn server on loopback, in a thread of the test process (tests/web and integration)."""

from __future__ import annotations

import threading
import time

import httpx
import uvicorn

from tests.integration.services import free_port

TOKEN = "test-token-7f3a"


class LiveServer:
    """uvicorn serving ``app`` on 127.0.0.1:<free port> until ``stop``."""

    def __init__(self, app: object) -> None:
        self.port = free_port()
        self.server = uvicorn.Server(
            uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning")
        )  # type: ignore[arg-type]
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.05)
        self.url = f"http://127.0.0.1:{self.port}"

    def client(self, token: str | None = TOKEN) -> httpx.Client:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=120)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=30)
