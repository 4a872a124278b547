"""Registry releases submitted by reference and fetched by a worker (``worker.pipeline.fetch``),
against the loopback registries of ``tests.fixtures.registry``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from producers.registry import (
    Politeness,
    PoliteTransport,
    RegistryUnavailableError,
    parse_spec,
    polite_client,
)
from tests.fixtures.registry import (
    INIT,
    PKG_HOOK,
    PKG_OLD,
    SETUP_NEW,
    SETUP_OLD,
    npm_files,
    tarball,
)
from worker.adapters.db import FETCHED, INTAKE_FAILED, PENDING
from worker.cli import app
from worker.pipeline import sweeper
from worker.pipeline.fetch import fetch_release, record_fetches
from worker.tasks.embedded import EmbeddedGate

POLICY = "malicious-package"


@pytest.fixture()
def client() -> Iterator[httpx.Client]:
    """The polite client the fetch task uses, without sleeping between retries."""
    with httpx.Client(transport=PoliteTransport(Politeness(rate=0), sleep=lambda _: None)) as c:
        yield c


@pytest.fixture()
def releases(served) -> None:
    """A PyPI version bump, an npm release that adds an install hook, a tampered npm release."""
    reg, base = served
    reg.pypi(
        "demo-pkg",
        {
            "1.0.0": tarball("demo_pkg-1.0.0", {"setup.py": SETUP_OLD, "demo/__init__.py": INIT}),
            "1.0.1": tarball("demo_pkg-1.0.1", {"setup.py": SETUP_NEW, "demo/__init__.py": INIT}),
        },
    )
    hook = {"1.0.0": tarball("package", npm_files(PKG_OLD)), "1.0.1": tarball("package", npm_files(PKG_HOOK))}
    reg.npm("demo-npm", hook, base, latest="1.0.1")
    reg.npm("bent-npm", {"2.0.0": tarball("package", npm_files(PKG_OLD))}, base, latest="2.0.0")
    reg.tamper.add("/tarballs/bent-npm-2.0.0.tgz")


def fetch_all(gate: EmbeddedGate, client: httpx.Client, ids: list[str]) -> dict[str, str]:
    """Run the fetch task's body for each id, gating what it registers in-process."""

    def enqueue_batch(gate_ids: list[str]) -> None:
        for gate_id in gate_ids:
            gate.run(gate_id)

    return {fid: fetch_release(gate.rt, fid, client, enqueue_batch).status for fid in ids}


def test_a_recorded_batch_is_fetched_gated_and_a_bad_release_fails_alone(gate, client, releases) -> None:
    """A fetched bump is allowed, a new install hook quarantined; a missing and a tampered release
    each end intake_failed with a one-line reason while the rest of the batch is gated."""
    specs = ["pypi:demo-pkg", "npm:demo-npm", "npm:no-such-pkg", "npm:bent-npm"]
    rows = record_fetches(gate.rt, [parse_spec(s) for s in specs], [POLICY])
    assert [r.status for r in rows] == [PENDING] * 4  # recorded before anything is fetched

    done = fetch_all(gate, client, [r.id for r in rows])

    assert list(done.values()) == [FETCHED, FETCHED, INTAKE_FAILED, INTAKE_FAILED]
    found = gate.rt.fetch_repo.get_many(r.id for r in rows)
    bump, hook, missing, bent = (found[r.id] for r in rows)
    assert bump.label == "pypi:demo-pkg:1.0.0->1.0.1" and hook.label == "npm:demo-npm:1.0.0->1.0.1"
    gates = gate.rt.repo.get_many([*bump.gates, *hook.gates])
    assert [gates[g].status for g in bump.gates] == ["allow"]
    assert [gates[g].status for g in hook.gates] == ["quarantine"]
    assert gates[bump.gates[0]].sha256 == bump.sha256 and gate.rt.store.exists(
        gates[bump.gates[0]].object_key
    )
    assert missing.reason is not None and "no-such-pkg" in missing.reason and "not found" in missing.reason
    assert bent.reason is not None and "sha512 does not match" in bent.reason
    assert "\n" not in missing.reason + bent.reason
    trail = [(e.event, e.detail) for e in gate.rt.repo.audit_trail(missing.id)]
    assert (INTAKE_FAILED, missing.reason) in trail


def test_a_second_delivery_of_a_fetched_release_does_nothing(gate, client, releases) -> None:
    """A fetch message delivered twice gates its release once: the second delivery is skipped."""
    (row,) = record_fetches(gate.rt, [parse_spec("pypi:demo-pkg==1.0.1")], [POLICY])
    first = fetch_all(gate, client, [row.id])
    again = fetch_all(gate, client, [row.id])

    assert (first[row.id], again[row.id]) == (FETCHED, "skipped")
    assert gate.rt.fetch_repo.get_many([row.id])[row.id].attempts == 1


def test_a_known_previous_version_is_the_one_diffed_against(gate, client, served) -> None:
    """A reference that names its previous version is diffed against that one, not the one just before."""
    reg, base = served
    versions = {
        v: tarball("package", npm_files(PKG_OLD | {"version": v})) for v in ("1.0.0", "1.1.0", "1.2.0")
    }
    reg.npm("demo-npm", versions, base, latest="1.2.0")
    (row,) = record_fetches(gate.rt, [parse_spec("npm:demo-npm@1.2.0", previous="1.0.0")], [POLICY])

    fetch_all(gate, client, [row.id])

    assert gate.rt.fetch_repo.get_many([row.id])[row.id].label == "npm:demo-npm:1.0.0->1.2.0"


def busy_registry(statuses: list[int]) -> httpx.MockTransport:
    """A registry answering the given statuses in turn (then 503 forever)."""
    answers = iter(statuses)

    def answer(request: httpx.Request) -> httpx.Response:
        status = next(answers, 503)
        return httpx.Response(status, json={}, headers={"Retry-After": "2"} if status == 429 else {})

    return httpx.MockTransport(answer)


def test_an_unreachable_registry_is_retried_then_recorded(gate) -> None:
    """A registry answering 503 is retried later while tries remain, then recorded as intake_failed."""
    transport = PoliteTransport(Politeness(retries=1), inner=busy_registry([]), sleep=lambda _: None)
    (row,) = record_fetches(gate.rt, [parse_spec("pypi:demo-pkg")], [POLICY])
    with httpx.Client(transport=transport) as client:
        with pytest.raises(RegistryUnavailableError, match="HTTP 503"):
            fetch_release(gate.rt, row.id, client, lambda ids: None, final=False)
        assert gate.rt.fetch_repo.get_many([row.id])[row.id].status == PENDING
        outcome = fetch_release(gate.rt, row.id, client, lambda ids: None, final=True)

    assert outcome.status == INTAKE_FAILED and "retries spent" in outcome.reason


def test_the_polite_client_retries_a_busy_registry_and_not_a_missing_release() -> None:
    """429 and 503 are retried with backoff (Retry-After honoured); a 404 is answered at once."""
    slept: list[float] = []
    politeness = Politeness(rate=0, retries=3, backoff_s=0.01, backoff_max_s=5)
    inner = busy_registry([429, 503, 200])
    with httpx.Client(transport=PoliteTransport(politeness, inner=inner, sleep=slept.append)) as client:
        assert client.get("http://registry.test/simple/x/").status_code == 200
    assert len(slept) == 2 and slept[0] == 2.0 and 0 < slept[1] <= 0.02  # Retry-After, then backoff
    slept.clear()
    with httpx.Client(
        transport=PoliteTransport(politeness, inner=busy_registry([404]), sleep=slept.append)
    ) as c:
        assert c.get("http://registry.test/simple/x/").status_code == 404
    assert not [s for s in slept if s > 0]


def test_the_sweeper_resends_a_lost_fetch_and_gives_up_after_max_attempts(gate, monkeypatch) -> None:
    """A pending fetch whose message was lost is sent again by the sweeper; past max_attempts it
    ends intake_failed instead of looping."""
    monkeypatch.setattr(gate.rt.settings, "requeue_after_s", 0.001)
    (row,) = record_fetches(gate.rt, [parse_spec("pypi:demo-pkg")], [POLICY])
    sent: list[str] = []

    first = sweeper.sweep(gate.rt, lambda gid: None, sent.append)
    for _ in range(gate.rt.settings.max_attempts):
        gate.rt.fetch_repo.start(row.id)  # deliveries that died mid-fetch
    last = sweeper.sweep(gate.rt, lambda gid: None, sent.append)

    assert first["fetch_requeued"] == 1 and sent == [row.id]
    assert last["fetch_gave_up"] == 1
    assert gate.rt.fetch_repo.get_many([row.id])[row.id].status == INTAKE_FAILED


def test_submit_records_releases_for_the_fetch_queue_without_downloading(
    served, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`canary submit @LIST` with a broker records each release and returns: nothing is downloaded
    on the submitting host, and `canary status` shows each one pending."""
    reg, _ = served
    listing = tmp_path / "tonight.txt"
    listing.write_text("# nightly\npypi:demo-pkg==1.0.1\nnpm:@acme/thing\n")
    monkeypatch.setenv("CANARY_DATA_DIR", str(tmp_path / "canary"))
    monkeypatch.setenv("CANARY_BROKER_URL", "memory://")
    monkeypatch.setenv("CANARY_RESULT_BACKEND", "cache+memory://")
    runner = CliRunner()

    result = runner.invoke(app, ["submit", "-p", POLICY, f"@{listing}"])

    assert result.exit_code == 0, result.output
    lines = [line.split("\t") for line in result.stdout.splitlines()]
    assert [(kind, status, spec) for _, kind, status, spec in lines] == [
        ("fetch", PENDING, "pypi:demo-pkg==1.0.1"),
        ("fetch", PENDING, "npm:@acme/thing"),
    ]
    assert reg.requests == []
    shown = runner.invoke(app, ["status", lines[0][0]])
    assert shown.stdout.split("\t")[:3] == [lines[0][0], PENDING, "pypi:demo-pkg==1.0.1\n"]


def test_worker_serves_every_queue_unless_told(monkeypatch: pytest.MonkeyPatch) -> None:
    """`canary worker` serves the gate and fetch queues by default; `-Q canary.fetch` serves only that."""
    from worker.cli import ops

    argvs: list[list[str]] = []
    monkeypatch.setattr(ops, "celery", argvs.append)
    monkeypatch.setattr(ops, "chosen_policies", lambda refs: refs)
    runner = CliRunner()

    assert runner.invoke(app, ["worker"]).exit_code == 0
    assert runner.invoke(app, ["worker", "-Q", "canary.fetch"]).exit_code == 0

    served = [argv[argv.index("-Q") + 1] for argv in argvs]
    assert served == ["canary.gate,canary.fetch", "canary.fetch"]


def test_the_registry_client_of_a_worker_is_polite() -> None:
    """The fetch task's client goes through the polite transport."""
    with polite_client() as client:
        assert isinstance(client._transport, PoliteTransport)


def test_stuck_lists_a_pending_fetch_and_to_review_ends_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`canary stuck` lists a release still waiting for its fetch; --to-review ends it intake_failed."""
    from worker.pipeline.runtime import build_runtime
    from worker.settings import Settings

    monkeypatch.setenv("CANARY_DATA_DIR", str(tmp_path / "data"))
    rt = build_runtime(Settings(), role="test")
    (row,) = record_fetches(rt, [parse_spec("npm:demo-npm@1.0.1")], [POLICY])
    runner = CliRunner()

    listed = runner.invoke(app, ["stuck", "--older-than", "0s", "--json"])
    moved = runner.invoke(app, ["stuck", "--older-than", "0s", "--to-review", "--by", "ana"])

    assert listed.exit_code == 1, listed.output
    shown = json.loads(listed.stdout)
    assert (shown["gate_id"], shown["kind"], shown["stage"], shown["policy"]) == (
        row.id,
        "fetch",
        "waiting for fetch",
        POLICY,
    )
    assert "sent to review 1" in moved.output
    ended = rt.fetch_repo.get_many([row.id])[row.id]
    assert ended.status == INTAKE_FAILED and ended.reason is not None and "operator ana" in ended.reason


def test_the_polite_client_holds_a_stream_of_requests_to_its_rate() -> None:
    """A burst of requests to one host goes out at once; past it, requests wait for the rate."""
    slept: list[float] = []
    politeness = Politeness(rate=10, burst=2, retries=0)
    transport = PoliteTransport(politeness, inner=busy_registry([200] * 5), sleep=slept.append)
    with httpx.Client(transport=transport) as client:
        for _ in range(5):
            client.get("http://registry.test/simple/x/")
    assert slept == pytest.approx([0.1, 0.2, 0.3], abs=0.05)


def test_the_in_process_pool_keeps_its_own_pace() -> None:
    """`canary scan`'s release pool downloads as many at once as it has threads, unthrottled."""
    from producers.registry.pool import ReleasePool

    pool = ReleasePool(8, lambda client, spec: None, lambda archives: None)
    try:
        transport = pool.client._transport
        assert isinstance(transport, PoliteTransport)
        assert (transport.politeness.per_host, transport.politeness.rate) == (8, 0)
    finally:
        pool.close(wait=True)
