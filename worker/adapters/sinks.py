"""Where decided artifacts go: the allowed queue, the quarantine bucket, the review queue.

Production publishes JSON messages on durable kombu queues (``canary.allowed``,
``canary.review``) and writes quarantined artifacts to an S3 bucket with
server-side encryption. The embedded default writes the same payloads to local
folders. Delivery is at-least-once: every message carries ``gate_id`` (and
``submission_id``) so consumers can de-duplicate.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Protocol

from worker.adapters.storage import LocalStore


class QueueSink(Protocol):
    location: str

    def publish(self, message: dict[str, Any], message_id: str) -> None: ...


class FolderSink:
    """One JSON file per message: ``<folder>/<message_id>.json`` (atomic)."""

    def __init__(self, folder: Path) -> None:
        self.store = LocalStore(folder)
        self.location = str(folder)

    def publish(self, message: dict[str, Any], message_id: str) -> None:
        body = json.dumps(message, sort_keys=True).encode()
        self.store.put(f"{message_id}.json", body, content_type="application/json")


class KombuSink:
    """A durable kombu queue; messages are persistent JSON."""

    # kombu ships py.typed but leaves these functions unannotated, hence the narrow ignores.
    def __init__(self, url: str, queue: str) -> None:
        from kombu.connection import Connection
        from kombu.entity import Exchange, Queue

        self.location = f"{queue}@{url.split('@')[-1]}"
        self.connection = Connection(url)  # type: ignore[no-untyped-call]
        self.exchange = Exchange(queue, type="direct", durable=True)  # type: ignore[no-untyped-call]
        self.queue = Queue(queue, self.exchange, routing_key=queue, durable=True)  # type: ignore[no-untyped-call]
        self._producer: Any = None

    def publish(self, message: dict[str, Any], message_id: str) -> None:
        if self._producer is None:
            self._producer = self.connection.Producer(serializer="json")  # type: ignore[no-untyped-call]
        publish = self.connection.ensure(self._producer, self._producer.publish, max_retries=5)  # type: ignore[no-untyped-call]
        publish(
            message,
            exchange=self.exchange,
            routing_key=self.queue.routing_key,
            declare=[self.queue],
            delivery_mode=2,
            message_id=message_id,
        )
