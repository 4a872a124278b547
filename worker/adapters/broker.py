"""What the broker still holds, and the sweeper's one-at-a-time lock.

The sweeper must not re-send a gate whose message is still on its way: a backlog (no worker
for a while) would otherwise become duplicate deliveries, each counted as an attempt. With a
Redis broker the messages can be read without taking them: the task queue's lists (one per
priority step) and kombu's ``unacked`` hash (messages a worker took and has not acknowledged
yet: ``task_acks_late``, so a running task is there too). Any gate id in them is alive.

Other brokers cannot be read this way: ``queued_gate_ids`` answers ``None`` (unknown) and the
sweeper falls back on time alone.
"""

from __future__ import annotations

import base64
import binascii
import fcntl
import json
import os
import re
import time
import uuid
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

# A gate id is a uuid4 in hex; sha256 digests (64 hex digits) never match as a whole word.
_GATE_ID = re.compile(rb"\b[0-9a-f]{32}\b")
_PRIORITY_SEP = "\x06\x16"  # kombu's separator between a queue name and its priority step
_PRIORITY_STEPS = (3, 6, 9)
_UNACKED = "unacked"
_UNACKED_INDEX = "unacked_index"  # delivery tag -> when a worker took the message
_RELEASE = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end"


def is_redis(url: str | None) -> bool:
    return bool(url) and str(url).split("://", 1)[0] in {"redis", "rediss"}


def _client(url: str) -> Any:
    import redis

    return redis.Redis.from_url(url, socket_timeout=10, socket_connect_timeout=10)


def gate_ids_in(raw: bytes) -> set[str]:
    """Gate ids mentioned by one stored kombu message (its headers and its base64 body)."""
    found = {m.decode() for m in _GATE_ID.findall(raw)}
    try:
        message = json.loads(raw)
    except ValueError:
        return found
    if isinstance(message, list) and message:  # an ``unacked`` entry: [message, exchange, key]
        message = message[0]
    body = message.get("body") if isinstance(message, dict) else None
    if isinstance(body, str):
        try:
            decoded = base64.b64decode(body, validate=False)
        except (binascii.Error, ValueError):
            decoded = body.encode()
        found |= {m.decode() for m in _GATE_ID.findall(decoded)}
    return found


def queued_gate_ids(url: str | None, queues: Iterable[str], visibility_timeout_s: float) -> set[str] | None:
    """Every gate id some message in ``queues`` (or taken and not acknowledged) still carries.

    A message taken longer than ``visibility_timeout_s`` ago and still not acknowledged is not
    counted: its worker died (no task outlives the hard time limit, which the visibility timeout
    exceeds), and kombu restores such messages only when a live worker gets round to it.
    ``None`` when the broker is not Redis (it cannot be read without consuming).
    """
    if url is None or not is_redis(url):
        return None
    client = _client(url)
    try:
        names = [
            q if step == 0 else f"{q}{_PRIORITY_SEP}{step}" for q in queues for step in (0, *_PRIORITY_STEPS)
        ]
        pipe = client.pipeline(transaction=False)
        pipe.hgetall(_UNACKED)
        for name in names:
            pipe.lrange(name, 0, -1)
        unacked, *lists = pipe.execute()
        # A message moves from a list to ``unacked`` between two commands of a worker: reading the
        # hash again after the lists narrows that window (the claim on the gate row keeps a copy
        # sent in it from counting as an attempt).
        unacked.update(client.hgetall(_UNACKED))
        taken_at = dict(client.zrange(_UNACKED_INDEX, 0, -1, withscores=True))
    finally:
        client.close()
    oldest = time.time() - visibility_timeout_s
    alive = [raw for tag, raw in unacked.items() if taken_at.get(tag, float("inf")) >= oldest]
    found: set[str] = set()
    for raw in (*alive, *(item for items in lists for item in items)):
        found |= gate_ids_in(raw)
    return found


@contextmanager
def sweep_lock(broker_url: str | None, folder: Path, ttl_s: float) -> Iterator[bool]:
    """Hold the sweeper's lock (yields True) or learn that another sweep holds it (False).

    Redis broker: a key set with ``NX`` that expires after ``ttl_s`` (a sweeper that died
    releases it by expiry). Otherwise an exclusive ``flock`` on a file in ``folder`` (released
    by the kernel when its process ends).
    """
    if is_redis(broker_url):
        assert broker_url is not None
        client = _client(broker_url)
        token = uuid.uuid4().hex
        key = "canary:sweep-lock"
        try:
            got = bool(client.set(key, token, nx=True, px=max(1, int(ttl_s * 1000))))
            try:
                yield got
            finally:
                if got:
                    client.eval(_RELEASE, 1, key, token)
        finally:
            client.close()
        return
    folder.mkdir(parents=True, exist_ok=True)
    fd = os.open(folder / "sweep.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
