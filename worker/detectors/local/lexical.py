"""The ``lexical`` detector: hashed char + word n-grams and a linear model, numpy only.

One model per policy, trained by ``python -m worker.training`` and shipped as
``worker/weights/<policy>/lexical.npz``: the bucket weights (float16), the bias,
the hash width, the window geometry and the decision threshold chosen by
group-aware cross-validation on the training split. Every byte is scanned:
the artifact is cut into overlapping windows and the most harmful window
decides (see :mod:`worker.detectors.local.windows`).
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import numpy as np

from worker.core.policy import HarmPolicy
from worker.detectors.local.ngrams import featurize
from worker.detectors.local.scan_statistic import WindowNull
from worker.detectors.local.windows import (
    WindowedModelDetector,
    cached,
    model_digests,
    models_dir,
    verified_bytes,
)

ARTIFACT = "lexical.npz"
# Window text featurized per call: its n-gram arrays take ~130 bytes per byte of text, so 1 MB
# batches peaked at +140 MB a vote; at 64 KB it is +10 MB, and faster (the arrays stay in cache).
BATCH_BYTES = 64 << 10


@dataclass(frozen=True)
class LexicalModel:
    """Bucket weights and everything needed to score windows exactly as in training."""

    weights: np.ndarray  # (2**bits,) float32
    bias: float
    bits: int
    window: int
    overlap: int
    threshold: float
    null: WindowNull | None = None
    added_only: bool = False  # reads a diff's added lines and context only (worker.core.views.added_view)

    @classmethod
    def load(cls, source: Path | BinaryIO) -> LexicalModel:
        with np.load(source) as archive:
            return cls(
                weights=archive["weights"].astype(np.float32),
                bias=float(archive["bias"]),
                bits=int(archive["bits"]),
                window=int(archive["window"]),
                overlap=int(archive["overlap"]),
                threshold=float(archive["threshold"]),
                null=WindowNull.from_archive(archive),
                added_only=bool(archive["added_only"]) if "added_only" in archive.files else False,
            )

    # Not a field: how a vote is computed, not what was trained. The batch's n-gram arrays are the
    # vote's peak: on a 1 MB diff (in-process, 2026-11-28) 256 KB batches peaked at +42.9 MB, 64 KB
    # at +14.7 and 32 KB at +8.3, all 1.0-1.2 CPU-s; same logits.
    batch_bytes = 32 << 10

    def logits(self, windows: list[str]) -> np.ndarray:
        """One logit per window (each window's alone: the batch it comes in changes nothing)."""
        rows, buckets, values = featurize(windows, self.bits)
        sums = np.bincount(rows, weights=self.weights[buckets] * values, minlength=len(windows))
        return sums + self.bias


def load_model(
    policy_id: str, directory: Path | None = None, policy: HarmPolicy | None = None
) -> LexicalModel:
    """The policy's lexical model, loaded once per content of its file (``policy``: the file must
    be what that policy was fingerprinted with)."""
    path = (directory or models_dir()) / policy_id / ARTIFACT
    digests = model_digests([path], policy, f"lexical model for policy {policy_id!r}")
    return cached(
        "lexical", str(path), digests, lambda: LexicalModel.load(io.BytesIO(verified_bytes(path, *digests)))
    )


class LexicalDetector(WindowedModelDetector):
    """Votes with the policy's hashed n-gram linear model; ``threshold`` overrides the trained one."""

    backend = "lexical"

    def load(self, policy: HarmPolicy) -> LexicalModel:
        return load_model(policy.id, self.models_dir, policy)
