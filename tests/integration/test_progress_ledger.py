"""The fan-out ledger in Redis: written in the background, read back by ``canary stuck``."""

from __future__ import annotations

import uuid

import pytest

from tests.integration.services import check_redis, redis_url, require

pytestmark = pytest.mark.integration


def test_expected_and_voted_detectors_are_written_without_waiting():
    """What a pre-check expects and what each detector voted is in Redis once the writer caught up."""
    from worker.adapters.progress import RedisProgress, fan_out_state

    url = redis_url()
    require(check_redis(url) is None, f"redis: {check_redis(url)}")
    ledger = RedisProgress(url, ttl_s=60)
    gates = [uuid.uuid4().hex, uuid.uuid4().hex]
    ledger.expect(gates, ["a", "b", "c"])
    ledger.voted("a", {gates[0]: "harmless", gates[1]: "harmful"})
    ledger.voted("b", {gates[0]: "invalid:timeout"})
    assert ledger.flush()
    entries = ledger.read(gates)
    assert [fan_out_state(entries[g]) for g in gates] == [(2, 3), (1, 3)]
    assert (
        entries[gates[1]]["v:a"] == "harmful" and 0 < ledger.client.ttl(f"canary:progress:{gates[0]}") <= 3660
    )
    ledger.client.delete(*(f"canary:progress:{g}" for g in gates))


def test_an_unreachable_redis_loses_only_the_ledger():
    """With Redis away the writes are dropped and logged; nothing is raised to the task."""
    from worker.adapters.progress import RedisProgress

    ledger = RedisProgress("redis://127.0.0.1:1/0", ttl_s=60)
    ledger.expect([uuid.uuid4().hex], ["a"])
    assert ledger.flush() and ledger.read(["x"]) == {}


def test_a_gates_fan_out_and_votes_go_out_as_one_write():
    """A gate's expected detectors and its votes, queued by several tasks in a burst, are written
    in one round trip with one HSET for that gate, not one write per task."""
    from worker.adapters.progress import RedisProgress, fan_out_state

    url = redis_url()
    require(check_redis(url) is None, f"redis: {check_redis(url)}")
    ledger = RedisProgress(url, ttl_s=60)
    commands: list[list[str]] = []
    pipeline = ledger.client.pipeline

    def counted(*args, **kwargs):
        pipe = pipeline(*args, **kwargs)
        execute = pipe.execute

        def recorded(*a, **k):
            commands.append([str(stack[0][0]) for stack in pipe.command_stack])
            return execute(*a, **k)

        pipe.execute = recorded
        return pipe

    ledger.client.pipeline = counted
    gate = uuid.uuid4().hex
    ledger.expect([gate], ["a", "b", "c"])
    for detector in ("a", "b", "c"):
        ledger.voted(detector, {gate: "harmless"})
    assert ledger.flush()
    assert commands == [["HSET", "EXPIRE"]]
    assert fan_out_state(ledger.read([gate])[gate]) == (3, 3)
    ledger.client.delete(f"canary:progress:{gate}")
