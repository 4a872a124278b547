"""Core values of the gate: verdicts, votes, coverage, evidence, reports.

Every value is a frozen pydantic model with ``extra="forbid"``. A detector's
outcome is data (a :class:`Vote` carrying either a verdict or an error kind),
never an exception that could skip the quorum.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Verdict = Literal["harmful", "harmless"]
Decision = Literal["allow", "quarantine", "review"]


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ErrorKind(StrEnum):
    """Why a vote is invalid. Every one of these counts as "not harmless"."""

    timeout = "timeout"
    exception = "exception"
    malformed = "malformed"
    partial_coverage = "partial_coverage"
    detector_compromised = "detector_compromised"
    unavailable = "unavailable"
    worker_lost = "worker_lost"
    missing = "missing"


class Span(Frozen):
    """A half-open byte range ``[start, end)`` into the artifact's original bytes."""

    start: int = Field(ge=0)
    end: int = Field(ge=0)


class Evidence(Frozen):
    """One pre-check rule hit: which rule, where, in which decoded layer."""

    rule_id: str
    span: Span
    layer: str = "text"
    weight: float = 1.0


class PrecheckResult(Frozen):
    """The pre-check's answer. ``harmful`` is decisive and blocks early."""

    verdict: Verdict
    score: float = 0.0
    evidence: tuple[Evidence, ...] = ()
    signals: tuple[str, ...] = ()


class Coverage(Frozen):
    """What part of the artifact a detector (or the gate) actually looked at."""

    total_bytes: int = Field(ge=0)
    scanned_bytes: int = Field(ge=0)
    segments: int = Field(default=1, ge=0)
    window_bytes: int | None = None
    overlap_bytes: int | None = None

    @property
    def complete(self) -> bool:
        return self.scanned_bytes >= self.total_bytes

    @property
    def ratio(self) -> float:
        return 1.0 if self.total_bytes == 0 else min(1.0, self.scanned_bytes / self.total_bytes)

    @classmethod
    def full(cls, total_bytes: int) -> Coverage:
        return cls(total_bytes=total_bytes, scanned_bytes=total_bytes)


class ScoredWindow(Frozen):
    """One of a local model's highest-scoring windows: where it lies, never its text (the rules
    detector names its evidence spans this way, its rule's weight as logit and score).

    ``start``/``end`` are byte offsets into ``view``, the view of the artifact the model read
    (``raw``, ``added``, ``decoded:N``, ``prose``: :mod:`worker.core.views`). ``logit`` is the
    window's own; ``score`` what the vote's score would be were this window the best. ``raw``: for a
    window of a view shown in offsets of its own (an e-mail's decoded part), the ``[start, end)`` of
    the artifact's bytes that write it, where known (the quorum compares places by it).
    """

    view: str = "raw"
    start: int = Field(ge=0)
    end: int = Field(ge=0)
    logit: float
    score: float
    raw: tuple[int, int] | None = None


class Answer(Frozen):
    """What a detector returns: its raw protocol output and what it cost.

    The coordinator, not the detector, turns this into a :class:`Vote` by
    validating ``output`` against the policy's strict protocol. ``windows``
    (local detectors only): the highest-scoring windows (rules: evidence spans), best first, as offsets;
    a harmful model vote names only the windows that reach its cut alone.
    """

    output: str
    coverage: Coverage
    tokens: int = 0
    cost_usd: float = 0.0
    score: float | None = None
    windows: tuple[ScoredWindow, ...] = ()


class Vote(Frozen):
    """One detector's vote: exactly one of ``verdict`` or ``error`` is set."""

    detector: str
    backend: str
    verdict: Verdict | None = None
    error: ErrorKind | None = None
    detail: str | None = None
    latency_ms: float = 0.0
    tokens: int = 0
    cost_usd: float = 0.0
    score: float | None = None
    coverage: Coverage | None = None
    windows: tuple[ScoredWindow, ...] = ()  # a local detector's best windows, best first (offsets only)

    @property
    def valid(self) -> bool:
        return (
            self.error is None
            and self.verdict is not None
            and self.coverage is not None
            and self.coverage.complete
        )


class PolicyRef(Frozen):
    id: str
    version: str
    sha256: str


class Timings(Frozen):
    precheck_ms: float = 0.0
    detectors_ms: float = 0.0
    total_ms: float = 0.0


class Report(Frozen):
    """The structured report keyed by ``decision``. Callers key off this, not prose."""

    gate_id: str
    sha256: str
    policy: PolicyRef
    decision: Decision
    reason: str
    precheck: PrecheckResult
    votes: tuple[Vote, ...] = ()
    coverage: Coverage
    timings: Timings = Timings()
    size_bytes: int = 0
