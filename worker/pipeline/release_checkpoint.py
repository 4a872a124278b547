"""A registry batch that resumes: a release that already reached gate rows under the same policies
is not downloaded again.

The checkpoint is the database: when a fetch registers a release's gates, they are recorded
(``release_gates``: ecosystem, normalised name and version, and each policy's id and
fingerprint) beside them. ``canary submit`` does not record a fetch for a pinned release
(``pypi:NAME==VERSION``, ``npm:NAME@VERSION``) found there and names its gates instead; a worker
that resolves a reference (the newest release, say) to a release found there ends the fetch with
those gates, downloading nothing. A release whose earlier fetch failed (``intake_failed``: 404,
digest, archive, retries spent) has no record and is fetched again; an edited policy is a new
fingerprint, so its releases are gated again, as any artifact is.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from policies import load_policy
from producers.registry import ReleaseRef, release_key
from worker.adapters.db import Gate, ReleaseGateRepo
from worker.pipeline.runtime import Runtime


class ReleaseCheckpoint:
    """The releases gated under one set of policies (refs, as ``canary submit -p`` names them)."""

    def __init__(self, rt: Runtime, policies: Sequence[str]) -> None:
        self.repo = ReleaseGateRepo(rt.repo.engine)
        loaded = [load_policy(ref) for ref in dict.fromkeys(policies)]
        self.policies = [(policy.id, policy.sha256) for policy in loaded]

    def gated(self, releases: Iterable[str]) -> dict[str, list[str]]:
        """Release key -> its gates, for the releases gated under every policy (gates that exist)."""
        return self.repo.gated(releases, self.policies)

    def record(self, release: str, gates: Sequence[Gate]) -> None:
        """``gates`` (one per policy) were just registered for ``release``."""
        self.repo.record(release, gates)


def split_gated(
    rt: Runtime, refs: Sequence[ReleaseRef], policies: Sequence[str]
) -> tuple[list[ReleaseRef], list[tuple[ReleaseRef, list[str]]]]:
    """``refs`` to fetch, and the pinned ones (a version, no explicit previous) already gated under
    every one of ``policies``, each with its gates: the submitter records no fetch for those."""
    pinned = {
        ref: release_key(ref.ecosystem, ref.name, ref.version)
        for ref in refs
        if ref.version is not None and ref.previous is None
    }
    found = ReleaseCheckpoint(rt, policies).gated(pinned.values()) if pinned else {}
    gated = [(ref, found[key]) for ref, key in pinned.items() if key in found]
    skipped = {ref for ref, _ in gated}
    return [ref for ref in refs if ref not in skipped], gated
