"""Static token embeddings distilled from all-MiniLM-L6-v2, read with numpy + ``tokenizers`` only.

The distilled model (model2vec, offline, at training time) is a ``vocab x dim``
float16 matrix: one vector per WordPiece token, as MiniLM embeds that token
alone, PCA-reduced and SIF-weighted. A window of text becomes the mean and the
max of its tokens' vectors (mean carries the topic and register, max keeps a
few strong tokens from being averaged away in a long window). No transformer
runs at scan time, so the cost is one tokenizer pass and a gather.
"""

from __future__ import annotations

import io
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from tokenizers import Tokenizer

EMBEDDING_DIR = "minilm-static"
EMBEDDINGS = "embeddings.npz"
TOKENIZER = "tokenizer.json"


@dataclass(frozen=True)
class StaticEmbedding:
    """A tokenizer and its per-token vectors; turns windows into fixed-size features."""

    tokenizer: Tokenizer
    vectors: np.ndarray  # (vocab, dim), as stored (float16 in the shipped file)
    unknown_id: int | None

    @classmethod
    def load(cls, directory: Path) -> StaticEmbedding:
        """Read ``tokenizer.json`` and ``embeddings.npz`` from ``directory``."""
        return cls.from_bytes((directory / EMBEDDINGS).read_bytes(), (directory / TOKENIZER).read_bytes())

    @classmethod
    def from_bytes(cls, embeddings: bytes, tokenizer_json: bytes) -> StaticEmbedding:
        """The embedding from the contents of ``embeddings.npz`` and ``tokenizer.json``."""
        tokenizer = Tokenizer.from_str(tokenizer_json.decode("utf-8"))
        tokenizer.no_truncation()  # scan everything: never drop tokens past 512
        tokenizer.no_padding()
        with np.load(io.BytesIO(embeddings)) as archive:
            # kept as stored (float16: 14 MB, where widened they were 29 MB in every process that
            # loads a semantic model); the rows a window reads are widened when it reads them
            vectors = archive["vectors"]
        return cls(tokenizer=tokenizer, vectors=vectors, unknown_id=tokenizer.token_to_id("[UNK]"))

    @property
    def dim(self) -> int:
        return int(self.vectors.shape[1])

    def features(self, windows: list[str]) -> np.ndarray:
        """``(len(windows), 2 * dim)``: L2-normalised mean pool, then max pool, per window."""
        out = np.zeros((len(windows), 2 * self.dim), dtype=np.float32)
        if not windows:
            return out
        # ``_fast``: the same ids without character offsets, which nothing here reads (20 % less CPU)
        encodings = self.tokenizer.encode_batch_fast(windows, add_special_tokens=False)
        for row, encoding in enumerate(encodings):
            ids = np.asarray(encoding.ids, dtype=np.int64)
            if self.unknown_id is not None:
                ids = ids[ids != self.unknown_id]
            if ids.size == 0:
                continue
            tokens = self.vectors[ids].astype(np.float32)
            mean = tokens.mean(axis=0)
            norm = float(np.linalg.norm(mean))
            out[row, : self.dim] = mean / norm if norm > 0.0 else mean
            out[row, self.dim :] = tokens.max(axis=0)
        return out

    def token_ids(self, windows: list[str]) -> list[np.ndarray]:
        """Each window's token ids in order, unknown tokens dropped (as :meth:`features` drops them)."""
        encodings = self.tokenizer.encode_batch_fast(windows, add_special_tokens=False) if windows else []
        ids = [np.asarray(encoding.ids, dtype=np.int64) for encoding in encodings]
        if self.unknown_id is None:
            return ids
        return [row[row != self.unknown_id] for row in ids]


@dataclass(frozen=True)
class Head:
    """A small feed-forward classifier: ReLU between layers, one logit out."""

    weights: tuple[np.ndarray, ...]
    biases: tuple[np.ndarray, ...]
    mean: np.ndarray
    scale: np.ndarray

    @classmethod
    def from_archive(cls, archive: np.lib.npyio.NpzFile) -> Head:
        layers = int(archive["layers"])
        weights = tuple(archive[f"w{i}"].astype(np.float32) for i in range(layers))
        biases = tuple(archive[f"b{i}"].astype(np.float32) for i in range(layers))
        return cls(weights, biases, archive["mean"].astype(np.float32), archive["scale"].astype(np.float32))

    def logits(self, features: np.ndarray) -> np.ndarray:
        """One logit per row of ``features``."""
        hidden = (features - self.mean) / self.scale
        for index, (weight, bias) in enumerate(zip(self.weights, self.biases, strict=True)):
            hidden = hidden @ weight + bias
            if index < len(self.weights) - 1:
                hidden = np.maximum(hidden, 0.0)
        return np.asarray(hidden, dtype=np.float32).reshape(-1)


# Zero rows between windows laid end to end: the second convolution (width 3, dilation 2) reaches two
# tokens to each side, so two zero rows keep every window's receptive field inside the window.
GAP = 2


@dataclass(frozen=True)
class ConvHead:
    """An order-aware head over the static token vectors: who asks whom to do what.

    Pooled vectors (:class:`Head`) lose word order: "ignore the tool output" and "the tool output
    said to ignore" pool alike. This head reads the token sequence: a learned projection of each
    token's static vector (``table = vectors @ proj``), two ReLU convolutions of width 3 (the second
    dilated by 2, so a feature sees seven tokens), the maximum of the second over the window beside
    the mean of the projected tokens, then a small ReLU layer and one logit. Same-size zero padding
    at the window's ends, exactly as the torch module it was trained as
    (``worker.training.conv``); numpy only at scan time.
    """

    table: np.ndarray  # (vocab, proj) float32: the static vectors through the learned projection
    conv1: np.ndarray  # (3 * proj, channels): the taps at -1, 0, +1 stacked, each (proj, channels)
    bias1: np.ndarray
    conv2: np.ndarray  # (3 * channels, channels), taps at -2, 0, +2
    bias2: np.ndarray
    dense: tuple[np.ndarray, ...]
    dense_bias: tuple[np.ndarray, ...]
    # The first convolution applied to every vocabulary entry at each tap, plus a zero row (index
    # ``vocab``) for padding: the layer becomes three gathers instead of three matrix products.
    taps: np.ndarray = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        vocab, proj = self.table.shape
        taps = np.zeros((3, vocab + 1, self.conv1.shape[1]), dtype=np.float32)
        for tap in range(3):
            taps[tap, :vocab] = self.table @ self.conv1[tap * proj : (tap + 1) * proj]
        object.__setattr__(self, "taps", taps)

    @classmethod
    def from_archive(cls, archive: Mapping[str, np.ndarray], vectors: np.ndarray) -> ConvHead:
        """The head of a ``semantic.npz`` (or of the same arrays in memory) over ``vectors``."""
        layers = int(archive["layers"])
        return cls(
            table=np.ascontiguousarray(
                np.asarray(vectors, dtype=np.float32) @ archive["proj"].astype(np.float32)
            ),
            conv1=archive["conv1"].astype(np.float32),
            bias1=archive["bias1"].astype(np.float32),
            conv2=archive["conv2"].astype(np.float32),
            bias2=archive["bias2"].astype(np.float32),
            dense=tuple(archive[f"w{i}"].astype(np.float32) for i in range(layers)),
            dense_bias=tuple(archive[f"b{i}"].astype(np.float32) for i in range(layers)),
        )

    # Windows convolved at once. The semantic vote on a 1 MB diff (in-process, 128 KB batches,
    # 2026-11-28): 32 windows +22 MB, 16 windows +13.7 MB, 8 windows +10.4 MB, 4 windows +10.5 MB,
    # all 3.3-3.6 CPU-s (earlier, on a 10 MB diff: 256 windows +149 MB and 20.3 CPU-s).
    chunk = 8

    def logits(self, ids: list[np.ndarray]) -> np.ndarray:
        """One logit per window, from each window's token ids; every token is read (no cut-off)."""
        out = np.zeros(len(ids), dtype=np.float32)
        for start in range(0, len(ids), self.chunk):
            out[start : start + self.chunk] = self._logits(ids[start : start + self.chunk])
        return out

    def _logits(self, ids: list[np.ndarray]) -> np.ndarray:
        """The windows laid end to end, ``GAP`` zero rows apart, and convolved at once."""
        out = np.zeros(len(ids), dtype=np.float32)
        pad = self.table.shape[0]  # the zero row of ``taps``
        lengths = np.asarray([row.size for row in ids], dtype=np.int64)
        starts = GAP + np.concatenate(([0], np.cumsum(lengths + GAP)[:-1]))
        total = int(starts[-1] + lengths[-1] + GAP)
        sequence = np.full(total + 2, pad, dtype=np.int64)  # one more pad row at each end
        positions = np.concatenate([start + np.arange(n) for start, n in zip(starts, lengths, strict=True)])
        if positions.size:
            sequence[positions + 1] = np.concatenate(ids)
        tokens = sequence[1:-1] != pad
        first = self.taps[0][sequence[:-2]]
        first += self.taps[1][sequence[1:-1]]
        first += self.taps[2][sequence[2:]]
        first += self.bias1
        np.maximum(first, 0.0, out=first)
        first[~tokens] = 0.0  # the gaps stay zero for the second layer, as the padding did in training
        second = _conv(first, self.conv2, 2)
        second += self.bias2
        np.maximum(second, 0.0, out=second)
        second[~tokens] = 0.0  # ReLU outputs are >= 0: a zero row never raises a window's maximum
        channels, proj = second.shape[1], self.table.shape[1]
        pooled = np.zeros((len(ids), channels + proj), dtype=np.float32)
        # each window's span [start, start + n); an empty window reads one gap row, then zeros
        spans = np.stack([starts, starts + np.maximum(lengths, 1)], axis=1).reshape(-1)
        pooled[:, :channels] = np.maximum.reduceat(second, spans, axis=0)[::2]
        projected = np.zeros((total, proj), dtype=np.float32)
        projected[tokens] = self.table[sequence[1:-1][tokens]]
        pooled[:, channels:] = (
            np.add.reduceat(projected, spans, axis=0)[::2] / np.maximum(lengths, 1)[:, None]
        )
        pooled[lengths == 0] = 0.0
        hidden = pooled
        for index, (weight, bias) in enumerate(zip(self.dense, self.dense_bias, strict=True)):
            hidden = hidden @ weight + bias
            if index < len(self.dense) - 1:
                hidden = np.maximum(hidden, 0.0)
        out[:] = hidden.reshape(-1)
        return out


def _conv(sequence: np.ndarray, kernel: np.ndarray, dilation: int) -> np.ndarray:
    """Width-3 convolution along the rows of ``sequence`` with zero padding (``kernel``: the taps
    at -dilation, 0, +dilation stacked as (3 * in, out))."""
    width, n = sequence.shape[1], sequence.shape[0]
    outputs = kernel.shape[1]
    # one product with the taps side by side, then each tap's columns shifted into place
    stacked = np.concatenate([kernel[:width], kernel[width : 2 * width], kernel[2 * width :]], axis=1)
    product = sequence @ stacked
    out: np.ndarray = product[:, outputs : 2 * outputs].copy()
    out[dilation:] += product[: n - dilation, :outputs]
    out[: n - dilation] += product[dilation:, 2 * outputs :]
    return out
