"""Where an open gate's detector fan-out stands: which detectors were expected, which voted.

The database knows a gate is ``running``; between the pre-check and the decide callback the
votes live only in the chord (the result backend). ``canary stuck`` needs to say "detectors k of n
voted" or "callback not run", so the pre-check records the detectors it fanned out to and each
detect task the gates it voted on, in one Redis hash per gate (``canary:progress:<gate id>``,
expiring with the gate's deadline plus an hour). Never on the decision path: the writes go out
from a background thread of the process, so no task waits for them, and a lost write (the
process died first, Redis was away) only makes ``stuck`` less specific. The thread wakes once per
burst and lingers ``LINGER_S`` before writing, so a gate's fan-out and its votes (four writes
from four tasks when one process runs them all) cost one wake-up and one round trip, one ``HSET``
per gate, not four of each on the gate's critical path; ``stuck`` looks at gates minutes old. With the embedded default (no broker, the graph runs in-process)
nothing is recorded.
"""

from __future__ import annotations

import os
import queue
import threading
import time
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Protocol

import structlog

log = structlog.get_logger("canary.progress")
PREFIX = "canary:progress:"
LINGER_S = 0.05  # how long the writer gathers a burst before its one round trip


class Progress(Protocol):
    def expect(self, gate_ids: Sequence[str], detectors: Sequence[str]) -> None: ...

    def voted(self, detector: str, verdicts: Mapping[str, str]) -> None: ...

    def read(self, gate_ids: Sequence[str]) -> dict[str, dict[str, str]]: ...


class NoProgress:
    """Records nothing (embedded default)."""

    def expect(self, gate_ids: Sequence[str], detectors: Sequence[str]) -> None:
        return None

    def voted(self, detector: str, verdicts: Mapping[str, str]) -> None:
        return None

    def read(self, gate_ids: Sequence[str]) -> dict[str, dict[str, str]]:
        return {}


class RedisProgress:
    """The ledger in Redis. Every failure is logged and swallowed: progress is advisory."""

    def __init__(self, url: str, ttl_s: float, linger_s: float = LINGER_S) -> None:
        import redis

        self.client: Any = redis.Redis.from_url(url, socket_timeout=2, socket_connect_timeout=2)
        self.ttl = int(ttl_s) + 3600
        self.linger_s = linger_s
        self._queue: queue.SimpleQueue[tuple[str, dict[str, str]] | threading.Event] = queue.SimpleQueue()
        self._writer: tuple[int, threading.Thread] | None = None
        self._start = threading.Lock()

    def _write(self, fields: Mapping[str, Mapping[str, str]]) -> None:
        """Queue the writes for the background writer (started in this process on first use)."""
        writer = self._writer
        if writer is None or writer[0] != os.getpid() or not writer[1].is_alive():
            with self._start:
                writer = self._writer
                if writer is None or writer[0] != os.getpid() or not writer[1].is_alive():
                    thread = threading.Thread(target=self._drain, name="canary-progress", daemon=True)
                    thread.start()
                    self._writer = (os.getpid(), thread)
        for gate_id, values in fields.items():
            self._queue.put((gate_id, dict(values)))

    def flush(self, timeout: float = 5.0) -> bool:
        """Wait until what was queued before this call is written (or failed); False on timeout."""
        if self._writer is None or self._writer[0] != os.getpid():
            return True
        done = threading.Event()
        self._queue.put(done)
        return done.wait(timeout)

    def _drain(self) -> None:
        while True:
            items = [self._queue.get()]  # the only wake-up of a burst: put() wakes no one meanwhile
            if not isinstance(items[0], threading.Event):
                time.sleep(self.linger_s)
            while True:
                try:
                    items.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            self._send([item for item in items if not isinstance(item, threading.Event)])
            for item in items:
                if isinstance(item, threading.Event):
                    item.set()

    def _send(self, writes: Sequence[tuple[str, dict[str, str]]]) -> None:
        if not writes:
            return
        merged: dict[str, dict[str, str]] = {}
        for gate_id, values in writes:
            merged.setdefault(gate_id, {}).update(values)
        try:
            pipe = self.client.pipeline(transaction=False)
            for gate_id, values in merged.items():
                pipe.hset(PREFIX + gate_id, mapping=values)
                pipe.expire(PREFIX + gate_id, self.ttl)
            pipe.execute()
        except Exception as exc:  # noqa: BLE001 - advisory: never fail a gate over it
            log.warning("progress_not_recorded", error=type(exc).__name__)

    def expect(self, gate_ids: Sequence[str], detectors: Sequence[str]) -> None:
        at = datetime.now(UTC).isoformat()
        self._write({gid: {"_expected": ",".join(detectors), "_fanned_out": at} for gid in gate_ids})

    def voted(self, detector: str, verdicts: Mapping[str, str]) -> None:
        self._write({gid: {f"v:{detector}": verdict} for gid, verdict in verdicts.items()})

    def read(self, gate_ids: Sequence[str]) -> dict[str, dict[str, str]]:
        try:
            pipe = self.client.pipeline(transaction=False)
            for gid in gate_ids:
                pipe.hgetall(PREFIX + gid)
            rows = pipe.execute()
        except Exception as exc:  # noqa: BLE001
            log.warning("progress_not_read", error=type(exc).__name__)
            return {}
        return {
            gid: {k.decode(): v.decode() for k, v in row.items()}
            for gid, row in zip(gate_ids, rows, strict=True)
            if row
        }


def progress_for(broker_url: str | None, ttl_s: float) -> Progress:
    if broker_url and broker_url.startswith(("redis://", "rediss://", "unix://")):
        return RedisProgress(broker_url, ttl_s)
    return NoProgress()


def fan_out_state(entry: Mapping[str, str]) -> tuple[int, int] | None:
    """``(voted, expected)`` detectors of one gate's ledger entry; None before the fan-out."""
    expected = [d for d in entry.get("_expected", "").split(",") if d]
    if not expected:
        return None
    return sum(1 for d in expected if f"v:{d}" in entry), len(expected)
