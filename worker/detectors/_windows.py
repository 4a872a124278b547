"""Shared plumbing of the local model detectors: windows, lazy artifacts, answers.

Both ``lexical`` and ``semantic`` scan every byte: the artifact is cut into
overlapping byte windows (:func:`worker.core.segment.segment_spans`), each
window is scored, and the best window decides. Max is the right aggregation
for "does any part of this try something": a 300-byte injection 30 KB deep in
a benign log moves one window, and a mean would dilute it away. A model
trained with a window null reads that maximum against the number of windows
(:mod:`worker.detectors._scan_statistic`), so that length alone does not
raise the score.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any, ClassVar, Protocol, TypeVar

import numpy as np

from policies.schema import HarmPolicy
from worker.core.detector import Artifact, verdict_output
from worker.core.mail import decoded_text_parts
from worker.core.models import Answer, Coverage, Verdict
from worker.core.segment import coverage_of, segment_spans
from worker.detectors._scan_statistic import WindowNull

T = TypeVar("T")

_LOCK = threading.RLock()  # re-entrant: a model loader may load a shared artifact
_CACHE: dict[tuple[str, str], object] = {}


def models_dir() -> Path:
    """Where the trained artifacts live (package data of ``worker.models``)."""
    return Path(str(resources.files("worker.models")))


def cached(kind: str, key: str, load: Callable[[], T]) -> T:
    """Load an artifact once per process (thread-safe) and keep it."""
    found = _CACHE.get((kind, key))
    if found is None:
        with _LOCK:
            found = _CACHE.get((kind, key))
            if found is None:
                found = _CACHE[(kind, key)] = load()
    return found  # type: ignore[return-value]


def window_spans(total: int, window: int, overlap: int) -> list[tuple[int, int]]:
    """The byte windows that together cover ``[0, total)``."""
    return list(segment_spans(total, window, overlap))


def window_texts(data: bytes, spans: list[tuple[int, int]]) -> list[str]:
    """Decode each window; a character cut at an edge becomes U+FFFD (the overlap sees it whole)."""
    return [data[start:end].decode("utf-8", errors="replace") for start, end in spans]


class WindowedModel(Protocol):
    # Read-only members, so that frozen dataclasses (the lexical and semantic models) conform.
    @property
    def threshold(self) -> float: ...
    @property
    def window(self) -> int: ...
    @property
    def overlap(self) -> int: ...
    @property
    def null(self) -> WindowNull | None: ...

    def logits(self, windows: list[str]) -> np.ndarray: ...


def artifact_score(model: WindowedModel, logits: np.ndarray) -> float:
    """The artifact's score from its windows' logits: the best window's probability, or, for a
    model trained with a window null, one minus the chance that the best of this many harmless
    windows scores as high (see :mod:`worker.detectors._scan_statistic`)."""
    if logits.size == 0:
        return 0.0
    if model.null is None:  # in the logits' own dtype, as the vote was computed before nulls existed
        return float(1.0 / (1.0 + np.exp(-logits.max())))
    return expit(model.null.artifact_logit(float(logits.max()), int(logits.size)))


def expit(logit: float) -> float:
    """The logistic function, without overflow at either end."""
    if logit >= 0.0:
        return 1.0 / (1.0 + math.exp(-logit))
    odds = math.exp(logit)
    return odds / (1.0 + odds)


def scored_answer(data: bytes, model: WindowedModel, threshold: float) -> Answer:
    """Score every window of ``data`` and answer with full coverage.

    An e-mail's base64 or quoted-printable text parts are also scored decoded (what its reader
    sees), in windows of their own; the coverage stays that of the raw bytes, all of them.
    """
    spans = window_spans(len(data), model.window, model.overlap)
    texts = window_texts(data, spans)
    for part in decoded_text_parts(data):
        texts += window_texts(part, window_spans(len(part), model.window, model.overlap))
    score = artifact_score(model, model.logits(texts))
    verdict: Verdict = "harmful" if score >= threshold else "harmless"
    coverage: Coverage = coverage_of(spans, len(data), model.window, model.overlap)
    return Answer(output=verdict_output(verdict), coverage=coverage, score=score)


class WindowedModelDetector:
    """A local model that scores every window of the artifact; the highest window decides.

    Subclasses name their ``backend`` and say how to ``load`` the policy's model;
    ``threshold`` overrides the trained one, ``models_dir`` the shipped artifacts.
    """

    backend: ClassVar[str]

    def __init__(self, name: str | None = None, threshold: float | None = None, **options: Any) -> None:
        self.name = name or self.backend
        self.threshold = threshold
        self.models_dir: Path | None = Path(options["models_dir"]) if "models_dir" in options else None

    def load(self, policy_id: str) -> WindowedModel:
        raise NotImplementedError

    def answer(self, artifact: Artifact, policy: HarmPolicy) -> Answer:
        model = self.load(policy.id)
        threshold = model.threshold if self.threshold is None else self.threshold
        return scored_answer(artifact.data, model, threshold)
