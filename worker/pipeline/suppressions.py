"""Suppressions: a reviewer's "this exact evidence is benign", so nightly scans stop re-flagging it.

A reviewer who allowed a gate may suppress its pre-check evidence (``canary review suppress``).
Each piece of evidence is keyed by its rule, the file it sits in (for a unified diff: the file
of the ``diff --git``/``+++`` header above it) and the sha256 of the hunk that holds it (for a
diff; of the whole artifact otherwise), never by a bare path, which an attacker could reuse.
A later gate under the same policy whose pre-check evidence is *all* suppressed is not blocked
early: its detectors run and the quorum decides, and its report's reason names each suppression
used. One piece of evidence that is not suppressed (a new hunk in the same file, a changed hunk,
another rule) and the pre-check blocks as before. Suppressions expire, can be revoked, and every
change is audited on the gate they came from.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from worker.adapters.db import REVIEWED, Gate, GateStatus, utcnow
from worker.adapters.db.suppressions import Suppression, SuppressionRepo
from worker.core.errors import UsageError
from worker.core.models import Evidence, PrecheckResult
from worker.pipeline.ref import GateRef
from worker.pipeline.runtime import Runtime


class SuppressionError(UsageError):
    """The gate cannot be suppressed (unknown, not allowed by a person, no evidence)."""


@dataclass(frozen=True)
class EvidenceKey:
    rule_id: str
    path: str
    content_sha256: str


def _aware(at: datetime) -> datetime:
    return at if at.tzinfo else at.replace(tzinfo=UTC)


def _repo(rt: Runtime) -> SuppressionRepo:
    return SuppressionRepo(rt.repo.engine)


def evidence_key(data: bytes, evidence: Evidence) -> EvidenceKey:
    """Where ``evidence`` sits: its file and the sha256 of its hunk (diffs), or of the artifact."""
    start = max(0, min(evidence.span.start, len(data)))
    header = max(data.rfind(b"\ndiff --git ", 0, start), data.rfind(b"\n+++ ", 0, start))
    if not data.startswith((b"diff --git ", b"--- ", b"+++ ")) and header < 0:
        return EvidenceKey(evidence.rule_id, "", hashlib.sha256(data).hexdigest())
    path = _path_of(data, header + 1 if header >= 0 else 0)
    hunk_start = data.rfind(b"\n@@ ", 0, start)
    hunk_start = hunk_start + 1 if hunk_start >= 0 and hunk_start > header else max(header, 0)
    ends = [i for i in (data.find(b"\n@@ ", start), data.find(b"\ndiff --git ", start)) if i >= 0]
    hunk_end = min(ends) + 1 if ends else len(data)
    return EvidenceKey(evidence.rule_id, path, hashlib.sha256(data[hunk_start:hunk_end]).hexdigest())


def _path_of(data: bytes, header: int) -> str:
    """The file named by the last ``+++ b/PATH`` (or ``diff --git a/X b/PATH``) at or before ``header``."""
    plus = data.rfind(b"+++ ", 0, header + 5)
    if plus >= 0:
        line = data[plus + 4 : data.find(b"\n", plus) if data.find(b"\n", plus) >= 0 else len(data)]
        name = line.split(b"\t")[0].strip().decode("utf-8", "replace")
        if name != "/dev/null":
            return name[2:] if name.startswith("b/") else name
    line = data[header : data.find(b"\n", header) if data.find(b"\n", header) >= 0 else len(data)]
    parts = line.decode("utf-8", "replace").split(" b/")
    return parts[-1].strip() if len(parts) > 1 else ""


def suppress_gate(rt: Runtime, gate_id: str, person: str, reason: str, days: float) -> list[Suppression]:
    """Record a suppression for each piece of pre-check evidence of a gate a person allowed."""
    from worker.pipeline.steps import load_artifact

    if not person.strip() or not reason.strip():
        raise SuppressionError("a suppression needs a reviewer and --reason WHY")
    gate = rt.repo.get(gate_id)
    if gate is None:
        raise SuppressionError(f"gate {gate_id} is unknown")
    allowed_by_person = any(e.event == f"{REVIEWED}allow" for e in rt.repo.audit_trail(gate_id))
    if gate.status != GateStatus.allow or not allowed_by_person:
        raise SuppressionError(
            f"gate {gate_id} was not allowed by a reviewer ({gate.status}): allow it first"
        )
    evidence = _evidence(gate)
    if not evidence:
        raise SuppressionError(f"gate {gate_id} has no pre-check evidence to suppress")
    data = load_artifact(rt, GateRef.of(gate)).data
    keys = list(dict.fromkeys(evidence_key(data, e) for e in evidence))
    expires = utcnow() + timedelta(days=days)
    repo = _repo(rt)
    made = [
        Suppression(
            policy_id=gate.policy_id, rule_id=k.rule_id, path=k.path[:1000], content_sha256=k.content_sha256,
            reason=reason[:500], created_by=person, from_gate=gate.id, expires_at=expires,
        )
        for k in keys
    ]  # fmt: skip
    repo.add(made, person)
    _CACHE.clear()
    return made


def _evidence(gate: Gate) -> list[Evidence]:
    if not gate.report:
        return []
    report = PrecheckResult.model_validate_json(_precheck_json(gate.report))
    return list(report.evidence)


def _precheck_json(report: str) -> str:
    import json

    return json.dumps(json.loads(report).get("precheck") or {"verdict": "harmless"})


def list_suppressions(rt: Runtime, include_inactive: bool = False) -> list[Suppression]:
    rows = _repo(rt).all()
    if include_inactive:
        return rows
    now = utcnow()
    return [s for s in rows if s.revoked_at is None and _aware(s.expires_at) > now]


def revoke(rt: Runtime, suppression_id: str, person: str) -> Suppression:
    found = _repo(rt).revoke(suppression_id, person)
    if found is None:
        raise SuppressionError(f"no active suppression {suppression_id}")
    _CACHE.clear()
    return found


_CACHE: dict[tuple[str, str], tuple[float, list[Suppression]]] = {}  # (database, policy)
_TTL_S = 30.0  # a new or revoked suppression reaches every worker within this


def _live(rt: Runtime, policy_id: str) -> list[Suppression]:
    key = (str(rt.repo.engine.url), policy_id)
    cached = _CACHE.get(key)
    if cached is not None and time.monotonic() - cached[0] < _TTL_S:
        return cached[1]
    rows = _repo(rt).not_revoked(policy_id)
    now = utcnow()
    live = [s for s in rows if _aware(s.expires_at) > now]
    _CACHE[key] = (time.monotonic(), live)
    return live


def covering(rt: Runtime, policy_id: str, data: bytes, precheck: PrecheckResult) -> list[Suppression]:
    """The suppressions that cover *every* piece of ``precheck``'s evidence; [] when any is not covered."""
    if precheck.verdict != "harmful" or not precheck.evidence:
        return []
    live = _live(rt, policy_id)
    if not live:
        return []
    index = {(s.rule_id, s.path, s.content_sha256): s for s in live}
    used: dict[str, Suppression] = {}
    for evidence in precheck.evidence:
        key = evidence_key(data, evidence)
        found = index.get((key.rule_id, key.path, key.content_sha256))
        if found is None:
            return []
        used[found.id] = found
    return list(used.values())


def named(used: list[Suppression]) -> str:
    """The reason's note naming each suppression used."""
    parts = [
        f"{s.rule_id} in {s.path or 'the artifact'} (suppression {s.id} by {s.created_by}, until {s.expires_at.date()})"
        for s in used
    ]
    return "pre-check evidence suppressed: " + "; ".join(parts)
