"""The reader: a fine-tuned MiniLM that re-reads the windows the semantic head ranks highest.

The static embedding head (:mod:`worker.detectors.local.semantic`) reads every window cheaply
and ranks them well, but its absolute score drifts with the text around a passage: who asks
whom to do what is lost in pooled or convolved token vectors. A transformer reads that, at
tens of milliseconds per window on a CPU core. So the semantic detector with ``reader: N``
scores every window with its head as before, then this model reads the N best windows, and
its best logit against its own threshold is the vote.

The artifact (``worker/weights/<policy>/reader.npz``, with the MiniLM tokenizer in
``worker/weights/minilm-reader/``) holds all-MiniLM-L6-v2's six layers fine-tuned on the
policy's windows (``worker/training/reader.py``, on a GPU), mean pooling and a linear head.
Large matrices are stored as int8 with one scale per output row and widened to float32 when
loaded; the forward pass is plain numpy. Nothing here runs unless a policy asks for a reader.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from worker.core.policy import HarmPolicy
from worker.detectors.local.windows import cached, model_digests, models_dir, verified_bytes

ARTIFACT = "reader.npz"
TOKENIZER_DIR = "minilm-reader"
TOKENIZER = "tokenizer.json"
MAX_TOKENS = 256  # what training read of a 512-byte window ([CLS] and [SEP] included)
_EPS = 1e-12  # BERT's layer-norm epsilon


def _gelu(x: np.ndarray) -> np.ndarray:
    """GELU in its tanh form (within 1e-3 of the exact one the model was trained with)."""
    inner = np.float32(0.7978845608) * (x + np.float32(0.044715) * x * x * x)
    out: np.ndarray = np.float32(0.5) * x * (np.float32(1.0) + np.tanh(inner))
    return out


def _layer_norm(x: np.ndarray, gain: np.ndarray, bias: np.ndarray) -> np.ndarray:
    mean = x.mean(-1, keepdims=True)
    centred = x - mean
    var = (centred * centred).mean(-1, keepdims=True)
    out: np.ndarray = centred / np.sqrt(var + _EPS) * gain + bias
    return out


def widen(archive: dict[str, np.ndarray] | np.lib.npyio.NpzFile, name: str) -> np.ndarray:
    """A matrix of the artifact as float32 ``(in, out)``: int8 rows times their scales, transposed."""
    if f"{name}.q" in archive:
        wide: np.ndarray = (
            archive[f"{name}.q"].astype(np.float32) * archive[f"{name}.scale"][:, None]
        ).T.copy()
        return wide
    return np.asarray(archive[name], dtype=np.float32)


@dataclass(frozen=True)
class Layer:
    qkv: np.ndarray  # (hidden, 3 * hidden): query, key and value at once
    qkv_bias: np.ndarray
    out: np.ndarray
    out_bias: np.ndarray
    norm1: tuple[np.ndarray, np.ndarray]
    up: np.ndarray
    up_bias: np.ndarray
    down: np.ndarray
    down_bias: np.ndarray
    norm2: tuple[np.ndarray, np.ndarray]


@dataclass(frozen=True)
class Reader:
    """The fine-tuned encoder, its head, its tokenizer and its threshold (a logit)."""

    words: np.ndarray  # (vocab, hidden) int8
    word_scales: np.ndarray  # (vocab,)
    positions: np.ndarray  # (max positions, hidden) float32, token type 0 added
    embed_norm: tuple[np.ndarray, np.ndarray]
    layers: tuple[Layer, ...]
    heads: int
    head_weight: np.ndarray  # (hidden,)
    head_bias: float
    threshold: float  # the vote's cut on the best window's logit
    floor: float  # the ranking head's logit a window must reach to be read
    count: int  # how many of the head's best windows are read
    tokenizer: object  # tokenizers.Tokenizer

    @classmethod
    def from_bytes(cls, artifact: bytes, tokenizer_json: bytes) -> Reader:
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_str(tokenizer_json.decode("utf-8"))
        tokenizer.no_padding()
        tokenizer.enable_truncation(MAX_TOKENS)
        with np.load(io.BytesIO(artifact)) as archive:
            count = int(archive["layers"])
            layers = tuple(
                Layer(
                    qkv=np.concatenate(
                        [widen(archive, f"l{i}.{p}") for p in ("query", "key", "value")], axis=1
                    ),
                    qkv_bias=np.concatenate(
                        [archive[f"l{i}.{p}.bias"] for p in ("query", "key", "value")]
                    ).astype(np.float32),
                    out=widen(archive, f"l{i}.out"),
                    out_bias=archive[f"l{i}.out.bias"].astype(np.float32),
                    norm1=(
                        archive[f"l{i}.norm1.gain"].astype(np.float32),
                        archive[f"l{i}.norm1.bias"].astype(np.float32),
                    ),
                    up=widen(archive, f"l{i}.up"),
                    up_bias=archive[f"l{i}.up.bias"].astype(np.float32),
                    down=widen(archive, f"l{i}.down"),
                    down_bias=archive[f"l{i}.down.bias"].astype(np.float32),
                    norm2=(
                        archive[f"l{i}.norm2.gain"].astype(np.float32),
                        archive[f"l{i}.norm2.bias"].astype(np.float32),
                    ),
                )
                for i in range(count)
            )
            return cls(
                words=archive["words.q"],
                word_scales=archive["words.scale"].astype(np.float32),
                positions=(
                    archive["positions"].astype(np.float32) + archive["token_type"].astype(np.float32)
                ),
                embed_norm=(
                    archive["embed_norm.gain"].astype(np.float32),
                    archive["embed_norm.bias"].astype(np.float32),
                ),
                layers=layers,
                heads=int(archive["heads"]),
                head_weight=archive["head.weight"].astype(np.float32),
                head_bias=float(archive["head.bias"]),
                threshold=float(archive["threshold"]),
                floor=float(archive["floor"]),
                count=int(archive["count"]),
                tokenizer=tokenizer,
            )

    def token_ids(self, texts: list[str]) -> list[list[int]]:
        return [encoding.ids for encoding in self.tokenizer.encode_batch(texts)]  # type: ignore[attr-defined]

    def logits(self, texts: list[str]) -> np.ndarray:
        """One logit per text (a window), harmful above ``threshold``."""
        if not texts:
            return np.zeros(0, dtype=np.float32)
        ids = self.token_ids(texts)
        longest = max(len(row) for row in ids)
        tokens = np.zeros((len(ids), longest), dtype=np.int64)
        mask = np.zeros((len(ids), longest), dtype=np.float32)
        for row, found in enumerate(ids):
            tokens[row, : len(found)] = found
            mask[row, : len(found)] = 1.0
        return self._forward(tokens, mask)

    def _forward(self, tokens: np.ndarray, mask: np.ndarray) -> np.ndarray:
        batch, length = tokens.shape
        hidden = self.positions.shape[1]
        width = hidden // self.heads
        x = self.words[tokens].astype(np.float32) * self.word_scales[tokens][..., None]
        x = _layer_norm(x + self.positions[:length], *self.embed_norm)
        # padding keys get a large negative score before the softmax, as BERT's extended mask does
        blocked = ((1.0 - mask) * np.float32(-1e9))[:, None, None, :]
        scale = np.float32(1.0 / np.sqrt(width))
        x = x.reshape(batch * length, hidden)  # the dense layers as one matrix product each
        for layer in self.layers:
            qkv = x @ layer.qkv + layer.qkv_bias  # (batch * length, 3 * hidden)
            qkv = qkv.reshape(batch, length, 3, self.heads, width).transpose(2, 0, 3, 1, 4)
            query, key, value = qkv[0], qkv[1], qkv[2]  # (batch, heads, length, width)
            scores = query @ key.transpose(0, 1, 3, 2) * scale + blocked
            scores -= scores.max(-1, keepdims=True)
            np.exp(scores, out=scores)
            scores /= scores.sum(-1, keepdims=True)
            context = (scores @ value).transpose(0, 2, 1, 3).reshape(batch * length, hidden)
            x = _layer_norm(x + context @ layer.out + layer.out_bias, *layer.norm1)
            x = _layer_norm(
                x + _gelu(x @ layer.up + layer.up_bias) @ layer.down + layer.down_bias, *layer.norm2
            )
        x = x.reshape(batch, length, hidden)
        pooled = (x * mask[..., None]).sum(1) / np.maximum(mask.sum(1, keepdims=True), 1.0)
        logits: np.ndarray = (pooled @ self.head_weight + self.head_bias).astype(np.float32)
        return logits


def reader_files(policy_id: str, directory: Path | None = None) -> list[Path]:
    """The files a policy's reader is loaded from."""
    root = directory or models_dir()
    return [root / policy_id / ARTIFACT, root / TOKENIZER_DIR / TOKENIZER]


def load_reader(policy_id: str, directory: Path | None = None, policy: HarmPolicy | None = None) -> Reader:
    """The policy's reader, loaded once per content of its files (which must be what ``policy``
    was fingerprinted with)."""
    files = reader_files(policy_id, directory)
    digests = model_digests(files, policy, f"reader for policy {policy_id!r}")
    return cached(
        "reader",
        str(files[0]),
        digests,
        lambda: Reader.from_bytes(*(verified_bytes(f, d) for f, d in zip(files, digests, strict=True))),
    )
