"""Registry releases by reference: recorded by the submitter, fetched and diffed by a worker.

``canary submit @tonight.txt`` with a broker does not download anything: :func:`record_fetches`
writes one ``fetches`` row per release (ecosystem, name, version, previous version when known,
policies) and only then is a ``canary.fetch`` message sent for it. A worker on any host runs
:func:`fetch_release`: the release and its predecessor are downloaded (the polite client: per-host
limits, retries with backoff), checked against the registry's digests, opened in memory and
diffed; the diff goes through the intake every other artifact takes
(``worker.pipeline.intake.submit_many``: stored under its sha256, one gate per policy, the gates
enqueued) and the row is marked ``fetched`` with its gates.

A release that cannot be had (404, digest mismatch, unreadable or oversized archive) ends its row
``intake_failed`` with a one-line reason; the rest of the batch goes on. A registry that cannot be
reached (``RegistryUnavailableError``) is retried by the task with backoff and recorded the same
way when the retries are spent. A lost message or a dead worker leaves the row ``pending``: the
sweeper sends it again (:func:`resend_stale`), ``canary stuck`` lists it. A release gated before
under the same policies is not downloaded again (``worker.pipeline.release_checkpoint``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import timedelta

import httpx
import structlog

from producers.registry import (
    RegistryError,
    RegistryUnavailableError,
    Release,
    ReleaseArchives,
    ReleaseDiff,
    ReleaseRef,
    diff_archives,
    download_release,
    resolve_release,
)
from worker.adapters.db import Fetch, utcnow
from worker.pipeline.intake import submit_many
from worker.pipeline.release_checkpoint import ReleaseCheckpoint
from worker.pipeline.runtime import Runtime

log = structlog.get_logger("canary.fetch")

Download = Callable[[httpx.Client, Release], ReleaseArchives]
Diff = Callable[[ReleaseArchives], ReleaseDiff]


def record_fetches(rt: Runtime, refs: Sequence[ReleaseRef], policies: Sequence[str]) -> list[Fetch]:
    """One ``pending`` row per release, written in one transaction (before any message is sent)."""
    if not policies:
        raise ValueError("at least one policy is required")
    chosen = json.dumps(list(dict.fromkeys(policies)))
    rows = [
        Fetch(
            spec=ref.spec[:255],
            ecosystem=ref.ecosystem,
            name=ref.name,
            version=ref.version,
            previous=ref.previous,
            policies=chosen,
        )
        for ref in refs
    ]
    return rt.fetch_repo.record(rows, actor=f"producer:{rt.actor}")


@dataclass(frozen=True)
class FetchOutcome:
    """What one fetch task did: ``fetched`` (with its gates), ``intake_failed`` or ``skipped``."""

    status: str
    label: str = ""
    gate_ids: tuple[str, ...] = ()
    reason: str = ""


def fetch_release(
    rt: Runtime,
    fetch_id: str,
    client: httpx.Client,
    enqueue_batch: Callable[[list[str]], None],
    final: bool = True,
    download: Download = download_release,
    diff: Diff = diff_archives,
) -> FetchOutcome:
    """Fetch, verify and diff one recorded release, then open its gates through the intake.

    ``final`` False: a registry that cannot be reached raises ``RegistryUnavailableError`` for
    the caller to retry later; True: it is recorded as ``intake_failed``. A fetch that is no
    longer pending (done by an earlier delivery) is ``skipped``; one whose release was gated
    before under the same policies (``worker.pipeline.release_checkpoint``) ends ``fetched``
    with those gates, downloading nothing (``already_gated``).
    """
    row = rt.fetch_repo.start(fetch_id)
    if row is None:
        return FetchOutcome("skipped")
    ref = ReleaseRef(row.ecosystem, row.name, row.version, row.previous)
    checkpoint = ReleaseCheckpoint(rt, row.policy_refs)
    try:
        resolved = resolve_release(client, ref)
        natural = ref.previous is None  # a diff against a chosen version is not the release's
        earlier = checkpoint.gated([resolved.key]).get(resolved.key) if natural else None
        if earlier:
            return _already_gated(rt, row, resolved.label, earlier)
        release = diff(download(client, resolved))
    except RegistryUnavailableError as exc:
        if not final:
            log.info("fetch_retry", fetch_id=fetch_id, spec=row.spec, error=str(exc), attempts=row.attempts)
            raise
        return _failed(rt, row, f"{row.spec}: {exc} (retries spent)")
    except RegistryError as exc:
        return _failed(rt, row, f"{row.spec}: {exc}")
    submitted = submit_many(rt, [(release.label, release.data)], row.policy_refs, enqueue_batch)[0]
    if natural:
        checkpoint.record(resolved.key, submitted.gates)
    gate_ids = [gate.id for gate in submitted.gates]
    rt.fetch_repo.finish(fetch_id, release.label, submitted.submission.sha256, gate_ids, f"worker:{rt.actor}")
    log.info("fetched", fetch_id=fetch_id, label=release.label, size=len(release.data), gates=len(gate_ids))
    return FetchOutcome("fetched", release.label, tuple(gate_ids))


def _already_gated(rt: Runtime, row: Fetch, label: str, gate_ids: list[str]) -> FetchOutcome:
    """End a fetch whose release an earlier one gated: its gates, nothing downloaded."""
    sha256 = next((gate.sha256 for gate in rt.repo.get_many(gate_ids).values()), "")
    rt.fetch_repo.finish(row.id, label, sha256, gate_ids, f"worker:{rt.actor}", note="already gated")
    log.info("already_gated", fetch_id=row.id, label=label, gates=len(gate_ids))
    return FetchOutcome("already_gated", label, tuple(gate_ids))


def _failed(rt: Runtime, row: Fetch, reason: str) -> FetchOutcome:
    rt.fetch_repo.fail(row.id, reason, f"worker:{rt.actor}")
    log.warning("intake_failed", fetch_id=row.id, reason=reason)
    return FetchOutcome("intake_failed", reason=reason)


def resend_stale(
    rt: Runtime, enqueue: Callable[[str], None], queued: set[str] | None, counts: dict[str, int]
) -> None:
    """The sweeper's share: a pending fetch untouched for ``requeue_after_s`` whose message is not
    in the broker (``queued``: ids some message still carries; None when the broker cannot say)
    is sent again; one past ``max_attempts`` ends ``intake_failed``."""
    settings = rt.settings
    stale = rt.fetch_repo.stale(utcnow() - timedelta(seconds=settings.requeue_after_s))
    for row in stale:
        if queued is not None and row.id in queued:
            counts["fetch_still_queued"] += 1
            continue
        if row.attempts >= settings.max_attempts:
            if rt.fetch_repo.fail(row.id, f"{row.spec}: gave up after {row.attempts} attempts", "sweeper"):
                counts["fetch_gave_up"] += 1
            continue
        rt.fetch_repo.touch_requeued(row.id, "sweeper", f"attempts={row.attempts}")
        enqueue(row.id)
        counts["fetch_requeued"] += 1
