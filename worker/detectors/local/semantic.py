"""The ``semantic`` detector: static MiniLM token embeddings and a small head, numpy only.

The embedding family: windows of text become all-MiniLM-L6-v2 static token
embeddings (distilled offline with model2vec, shipped as
``worker/weights/minilm-static/``), scored by a per-policy head
(``worker/weights/<policy>/semantic.npz``: layer weights, window geometry,
threshold). The head either pools the window's vectors (:class:`Head`) or reads
them in order (:class:`ConvHead`, whose artifact holds ``conv1``). The run time
needs only numpy and ``tokenizers``. Every byte is scanned; the most harmful
window decides.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from worker.core.policy import HarmPolicy
from worker.detectors.local.cascade import Reader
from worker.detectors.local.embedding import (
    EMBEDDING_DIR,
    EMBEDDINGS,
    TOKENIZER,
    ConvHead,
    Head,
    StaticEmbedding,
)
from worker.detectors.local.scan_statistic import WindowNull
from worker.detectors.local.windows import (
    WindowedModelDetector,
    cached,
    model_digests,
    models_dir,
    verified_bytes,
)

ARTIFACT = "semantic.npz"


@dataclass(frozen=True)
class SemanticModel:
    """The shared embedding plus one policy's head and window geometry."""

    embedding: StaticEmbedding
    head: Head | ConvHead  # pooled vectors, or the token sequence (order-aware)
    window: int
    overlap: int
    threshold: float
    null: WindowNull | None = None
    added_only: bool = False  # reads a diff's added lines and context only (worker.core.views.added_view)

    # Window text per call, tokenized at once: with the conv head reading 8 windows at a time, the
    # vote on a 1 MB diff peaked at +10.4 MB with 128 KB and +4.7 MB with 32 KB, both 3.4-3.6
    # CPU-s (in-process, 2026-11-28). Not a field: how a vote is computed, not what was trained.
    batch_bytes = 32 << 10

    def logits(self, windows: list[str]) -> np.ndarray:
        if isinstance(self.head, ConvHead):
            return self.head.logits(self.embedding.token_ids(windows))
        return self.head.logits(self.embedding.features(windows))


def load_embedding(directory: Path | None = None, policy: HarmPolicy | None = None) -> StaticEmbedding:
    """The distilled static embedding, loaded once per content of its files."""
    return _embedding(directory, policy)[1]


def _embedding(directory: Path | None, policy: HarmPolicy | None) -> tuple[tuple[str, ...], StaticEmbedding]:
    path = (directory or models_dir()) / EMBEDDING_DIR
    files = [path / EMBEDDINGS, path / TOKENIZER]
    digests = model_digests(files, policy, "static embedding")
    embedding = cached(
        "embedding",
        str(path),
        digests,
        lambda: StaticEmbedding.from_bytes(
            *(verified_bytes(f, d) for f, d in zip(files, digests, strict=True))
        ),
    )
    return digests, embedding


def load_model(
    policy_id: str, directory: Path | None = None, policy: HarmPolicy | None = None
) -> SemanticModel:
    """The policy's semantic model, loaded once per content of its files (``policy``: they must
    be what that policy was fingerprinted with)."""
    path = (directory or models_dir()) / policy_id / ARTIFACT
    digests = model_digests([path], policy, f"semantic model for policy {policy_id!r}")
    embedding_digests, embedding = _embedding(directory, policy)

    def load() -> SemanticModel:
        with np.load(io.BytesIO(verified_bytes(path, *digests))) as archive:
            return SemanticModel(
                embedding=embedding,
                head=(
                    ConvHead.from_archive(archive, embedding.vectors)
                    if "conv1" in archive.files
                    else Head.from_archive(archive)
                ),
                window=int(archive["window"]),
                overlap=int(archive["overlap"]),
                threshold=float(archive["threshold"]),
                null=WindowNull.from_archive(archive),
                added_only=bool(archive["added_only"]) if "added_only" in archive.files else False,
            )

    # Keyed by the embedding's files too: a new embedding under the same head is a new model.
    return cached("semantic", str(path), digests + embedding_digests, load)


class SemanticDetector(WindowedModelDetector):
    """Votes with the policy's embedding head, or with ``reader: true`` with the reader on the
    head's best windows; ``threshold`` overrides the trained one."""

    backend = "semantic"
    READS_AGAIN = True

    def load(self, policy: HarmPolicy) -> SemanticModel:
        return load_model(policy.id, self.models_dir, policy)

    def load_reader(self, policy: HarmPolicy) -> Reader:
        from worker.detectors.local.reader import load_reader  # onnxruntime and 23 MB: loaded when asked

        return load_reader(policy.id, self.models_dir, policy)
