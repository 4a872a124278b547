"""The detector interface and the mechanical validation of a detector's answer.

A detector gets an :class:`Artifact` and the active policy and returns an
:class:`~worker.core.models.Answer` whose ``output`` must be exactly
``{"verdict": "harmful"}`` or ``{"verdict": "harmless"}``. The coordinator,
not the detector, decides whether that answer is a valid vote
(:func:`cast_vote`); anything off-protocol is an invalid vote.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cached_property
from typing import Protocol, runtime_checkable

from worker.core.models import Answer, Coverage, ErrorKind, Verdict, Vote
from worker.core.policy import HarmPolicy
from worker.core.policy import Protocol as AnswerProtocol


@dataclass(frozen=True)
class Artifact:
    """Untrusted bytes under gate. ``text`` is a lossless-enough UTF-8 view."""

    sha256: str
    data: bytes
    meta: dict[str, str] = field(default_factory=dict)

    @cached_property
    def text(self) -> str:
        return self.data.decode("utf-8", errors="replace")

    @property
    def size(self) -> int:
        return len(self.data)


@runtime_checkable
class Detector(Protocol):
    """One voter of the quorum. ``answer`` may raise: the caller turns that into a vote."""

    name: str
    backend: str

    def answer(self, artifact: Artifact, policy: HarmPolicy) -> Answer: ...


def verdict_output(verdict: Verdict) -> str:
    """The one canonical protocol answer for ``verdict``."""
    return json.dumps({"verdict": verdict})


def parse_verdict(output: str, protocol: AnswerProtocol) -> Verdict | None:
    """Strictly parse a protocol answer; ``None`` for anything malformed or extra.

    Accepted: one JSON object (surrounding whitespace allowed) with exactly the
    key ``protocol.field`` whose value is one of ``protocol.allowed``.
    """
    try:
        data = json.loads(output)
    except (ValueError, TypeError):
        return None
    if not isinstance(data, dict) or set(data) != {protocol.field}:
        return None
    value = data[protocol.field]
    if value == "harmful":
        return "harmful"
    if value == "harmless":
        return "harmless"
    return None


def cast_vote(
    detector: str,
    backend: str,
    answer: Answer,
    protocol: AnswerProtocol,
    latency_ms: float,
) -> Vote:
    """Validate ``answer`` mechanically and turn it into a vote (valid or not)."""
    common = {
        "detector": detector,
        "backend": backend,
        "latency_ms": latency_ms,
        "tokens": answer.tokens,
        "cost_usd": answer.cost_usd,
        "score": answer.score,
        "coverage": answer.coverage,
        "windows": answer.windows,
    }
    verdict = parse_verdict(answer.output, protocol)
    if verdict is None:
        return Vote(**common, error=ErrorKind.malformed, detail="answer is not the protocol")
    if not answer.coverage.complete:
        return Vote(
            **common,
            error=ErrorKind.partial_coverage,
            detail=f"covered {answer.coverage.scanned_bytes} of {answer.coverage.total_bytes} bytes",
        )
    return Vote(**common, verdict=verdict)


def error_vote(
    detector: str,
    backend: str,
    error: ErrorKind,
    detail: str = "",
    latency_ms: float = 0.0,
    total_bytes: int = 0,
) -> Vote:
    """An invalid vote for a detector that failed before answering."""
    return Vote(
        detector=detector,
        backend=backend,
        error=error,
        detail=detail[:200] or None,
        latency_ms=latency_ms,
        coverage=Coverage(total_bytes=total_bytes, scanned_bytes=0, segments=0),
    )
