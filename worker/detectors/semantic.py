"""The ``semantic`` detector: static MiniLM token embeddings and a small head, numpy only.

The embedding family: windows of text become pooled all-MiniLM-L6-v2 static
embeddings (distilled offline with model2vec, shipped as
``worker/models/minilm-static/``), scored by a per-policy head
(``worker/models/<policy>/semantic.npz``: standardisation, layer weights,
window geometry, threshold). The run time needs only numpy and ``tokenizers``.
Every byte is scanned; the most harmful window decides.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from worker.core.errors import DetectorError
from worker.core.models import ErrorKind
from worker.detectors._embedding import EMBEDDING_DIR, Head, StaticEmbedding
from worker.detectors._scan_statistic import WindowNull
from worker.detectors._windows import WindowedModelDetector, cached, models_dir

ARTIFACT = "semantic.npz"


@dataclass(frozen=True)
class SemanticModel:
    """The shared embedding plus one policy's head and window geometry."""

    embedding: StaticEmbedding
    head: Head
    window: int
    overlap: int
    threshold: float
    null: WindowNull | None = None

    def logits(self, windows: list[str]) -> np.ndarray:
        return self.head.logits(self.embedding.features(windows))


def load_embedding(directory: Path | None = None) -> StaticEmbedding:
    """The distilled static embedding, loaded once per process."""
    path = (directory or models_dir()) / EMBEDDING_DIR
    if not (path / "embeddings.npz").is_file():
        raise DetectorError("no static embedding shipped", kind=ErrorKind.unavailable)
    return cached("embedding", str(path), lambda: StaticEmbedding.load(path))


def load_model(policy_id: str, directory: Path | None = None) -> SemanticModel:
    """The policy's semantic model, loaded once per process."""
    path = (directory or models_dir()) / policy_id / ARTIFACT
    if not path.is_file():
        raise DetectorError(f"no semantic model for policy {policy_id!r}", kind=ErrorKind.unavailable)

    def load() -> SemanticModel:
        with np.load(path) as archive:
            return SemanticModel(
                embedding=load_embedding(directory),
                head=Head.from_archive(archive),
                window=int(archive["window"]),
                overlap=int(archive["overlap"]),
                threshold=float(archive["threshold"]),
                null=WindowNull.from_archive(archive),
            )

    return cached("semantic", str(path), load)


class SemanticDetector(WindowedModelDetector):
    """Votes with the policy's embedding head; ``threshold`` overrides the trained one."""

    backend = "semantic"

    def load(self, policy_id: str) -> SemanticModel:
        return load_model(policy_id, self.models_dir)
