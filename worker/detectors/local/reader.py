"""The reader: a fine-tuned MiniLM that re-reads the windows the semantic head ranks highest.

The static embedding head (:mod:`worker.detectors.local.semantic`) reads every window cheaply
and ranks them well, but its absolute score drifts with the text around a passage: who asks
whom to do what is lost in pooled or convolved token vectors. A transformer reads that, at
tens of milliseconds per window on a CPU core. So the semantic detector with ``reader: true``
scores every window with its head as before, then this model reads the head's best windows,
and its best logit against its own threshold is the vote.

The artifact (``worker/weights/<policy>/reader.npz``, with the MiniLM tokenizer in
``worker/weights/minilm-reader/``) holds all-MiniLM-L6-v2's six layers fine-tuned on the
policy's windows (``worker/training/reader.py``, on a GPU), mean pooling and a linear head,
its large matrices as int8 rows with one scale each. The embedding and the pooling are numpy;
the six layers run in onnxruntime as integer matrix products (see :func:`encoder_graph`), at
half the CPU of the same layers in float32. Nothing here runs unless a policy
asks for a reader.
"""

from __future__ import annotations

import functools
import io
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from worker.core.policy import HarmPolicy
from worker.detectors.local.windows import cached, model_digests, models_dir, verified_bytes

ARTIFACT = "reader.npz"
TOKENIZER_DIR = "minilm-reader"
TOKENIZER = "tokenizer.json"
MAX_TOKENS = 256  # what training read of a 512-byte window ([CLS] and [SEP] included)
_EPS = 1e-12  # BERT's layer-norm epsilon


def _layer_norm(x: np.ndarray, gain: np.ndarray, bias: np.ndarray) -> np.ndarray:
    mean = x.mean(-1, keepdims=True)
    centred = x - mean
    var = (centred * centred).mean(-1, keepdims=True)
    out: np.ndarray = centred / np.sqrt(var + _EPS) * gain + bias
    return out


def _rows(archive: dict[str, np.ndarray] | np.lib.npyio.NpzFile, name: str) -> tuple[np.ndarray, np.ndarray]:
    """A matrix of the artifact as stored: int8 rows ``(out, in)`` and one float32 scale per row."""
    return archive[f"{name}.q"], archive[f"{name}.scale"].astype(np.float32)


def encoder_graph(
    archive: dict[str, np.ndarray] | np.lib.npyio.NpzFile, integer: bool = True, signed: bool | None = None
) -> bytes:
    """The artifact's encoder layers as a serialized ONNX model.

    Input: ``x`` (tokens, hidden), the embedded and normed tokens of one window. Output: ``y``
    (tokens, hidden), the last layer's states. One window a run, so there is no padding to mask:
    the attention's mask and its add were 4-5 % of a window's CPU (``benchmarks/reader_cpu.py``).

    Each dense product is integer: the artifact's int8 rows as they are stored, times a token's
    activations quantized to 8 bits with a scale of its own (its largest magnitude over 127), so
    a window's logit does not depend on the windows read beside it. Against the same layers in
    float32 on the reader's windows: 0.02 logit on average, 0.3 at most, no window across the cut
    (``benchmarks/reader_cpu.py``). Attention, softmax, GELU and the layer norms stay float32.
    ``integer=False`` builds the float32 layers: the reference.

    The weights go in as stored (int8, ``signed``) where this CPU sums unsigned-by-signed byte
    products exactly (:func:`signed_products_exact`: AVX-512 VNNI, AVX-VNNI), else shifted by 128
    to uint8 with a zero point of 128, a kernel that is exact on every CPU: on an x86 CPU with
    AVX2 only, onnxruntime's u8 x s8 kernel adds byte pairs in a saturating 16-bit sum, which
    moved a logit by up to 2.6 (0.7 with uint8 weights, at 14 % more CPU; ``reader_cpu.py``).
    Either way the int32 sums are the same, so the logits do not depend on the CPU.
    """
    from onnx import TensorProto, helper, numpy_helper

    layers, heads = int(archive["layers"]), int(archive["heads"])
    hidden = int(archive["embed_norm.gain"].shape[0])
    width = hidden // heads
    nodes: list[Any] = []
    initializers: list[Any] = []

    def constant(name: str, value: np.ndarray | np.generic) -> str:
        initializers.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def op(kind: str, *inputs: str, **attributes: Any) -> str:
        out = f"{kind}_{len(nodes)}"
        nodes.append(helper.make_node(kind, list(inputs), [out], **attributes))
        return out

    last = constant("last_axis", np.array([-1], dtype=np.int64))
    levels = constant("levels", np.float32(127.0))
    eps = constant("eps", np.float32(1e-12))
    middle = constant("middle", np.uint8(128))
    unit = constant("unit", np.float32(1.0))

    if integer and signed is None:  # the float32 reference has no integer products to ask about
        signed = signed_products_exact()

    if integer:  # every product's activations have a row per token of the window: a zero point each
        tokens = op("Slice", op("Shape", "x"), constant("from", np.array([0])), constant("to", np.array([1])))
        centre = op("Expand", middle, tokens)

    def dense(x: str, rows: np.ndarray, row_scale: np.ndarray, bias: np.ndarray, name: str) -> str:
        """``x @ (rows * row_scale).T + bias``, with x's rows as uint8 around 128."""
        if not integer:
            wide = (rows.astype(np.float32) * row_scale[:, None]).T.copy()
            return op("Add", op("MatMul", x, constant(name, wide)), constant(f"{name}.bias", bias))
        peak = op("ReduceMax", op("Abs", x), last, keepdims=0)  # (tokens,)
        scale = op("Add", op("Div", peak, levels), eps)
        quantized = op("QuantizeLinear", x, scale, centre, axis=0)
        products = op(  # the int32 sums times each output's weight scale, in one pass
            "MatMulIntegerToFloat",
            quantized,
            constant(name, rows.T.copy() if signed else (rows.T.astype(np.int16) + 128).astype(np.uint8)),
            unit,
            constant(f"{name}.scale", row_scale),
            middle,
            *([] if signed else [middle]),  # the weights' zero point, when shifted to uint8
            domain="com.microsoft",
        )
        return op("Add", op("Mul", products, op("Unsqueeze", scale, last)), constant(f"{name}.bias", bias))

    def linear(x: str, name: str, rescale: float = 1.0) -> str:
        rows, row_scale = _rows(archive, name)
        return dense(x, rows, row_scale * rescale, archive[f"{name}.bias"].astype(np.float32) * rescale, name)

    def norm(x: str, name: str) -> str:
        gain = constant(f"{name}.gain", archive[f"{name}.gain"].astype(np.float32))
        bias = constant(f"{name}.bias", archive[f"{name}.bias"].astype(np.float32))
        return op("LayerNormalization", x, gain, bias, axis=-1, epsilon=_EPS)

    one = constant("one", np.float32(1.0))
    split = constant("split", np.array([1, -1, 3, heads, width]))  # (batch of one, tokens, q k v, ...)
    flat = constant("flat", np.array([-1, hidden]))
    root, half = constant("root", np.float32(np.sqrt(2.0))), constant("half", np.float32(0.5))
    x = "x"
    for i in range(layers):
        query, key, value = (_rows(archive, f"l{i}.{p}") for p in ("query", "key", "value"))
        scale = np.float32(1.0 / np.sqrt(width))  # the attention's, folded into the query's scales
        qkv = dense(
            x,
            np.concatenate([query[0], key[0], value[0]]),
            np.concatenate([query[1] * scale, key[1], value[1]]),
            np.concatenate([archive[f"l{i}.{p}.bias"].astype(np.float32) for p in ("query", "key", "value")])
            * np.concatenate([np.full(hidden, scale), np.ones(2 * hidden)]).astype(np.float32),
            f"l{i}.qkv",
        )
        heads_first = op("Transpose", op("Reshape", qkv, split), perm=[2, 0, 3, 1, 4])
        q, k, v = (op("Gather", heads_first, constant(f"l{i}.{n}", np.int64(n)), axis=0) for n in range(3))
        scores = op("MatMul", q, op("Transpose", k, perm=[0, 1, 3, 2]))
        attended = op("MatMul", op("Softmax", scores, axis=-1), v)
        context = op("Reshape", op("Transpose", attended, perm=[0, 2, 1, 3]), flat)
        x = norm(op("Add", x, linear(context, f"l{i}.out")), f"l{i}.norm1")
        up = linear(x, f"l{i}.up")
        # GELU as x * (erf(x / sqrt 2) + 1) * 0.5: the form onnxruntime fuses into one kernel
        gelu = op("Mul", op("Mul", up, op("Add", op("Erf", op("Div", up, root)), one)), half)
        x = norm(op("Add", x, linear(gelu, f"l{i}.down")), f"l{i}.norm2")
    nodes.append(helper.make_node("Identity", [x], ["y"]))
    graph = helper.make_graph(
        nodes,
        "reader",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["tokens", hidden])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["tokens", hidden])],
        initializers,
    )
    return _serialized(graph)


def _serialized(graph: Any) -> bytes:
    """An ONNX graph of standard and ``com.microsoft`` ops as a model onnxruntime reads."""
    from onnx import helper

    opsets = [helper.make_opsetid("", 18), helper.make_opsetid("com.microsoft", 1)]
    model = helper.make_model(graph, opset_imports=opsets)
    model.ir_version = 8  # onnxruntime 1.16 reads up to 9
    serialized: bytes = model.SerializeToString()
    return serialized


def _one_thread_session(model: bytes) -> Any:
    """An onnxruntime session on one thread, as a worker process holds one core."""
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    return onnxruntime.InferenceSession(model, options, providers=["CPUExecutionProvider"])


@functools.cache
def signed_products_exact() -> bool:
    """Whether this CPU's onnxruntime sums uint8 x int8 products exactly, asked of the kernel the
    reader's layers use: byte pairs of 255 x -128 (a zero point of 128 subtracted after) add up
    to -65,280, past what the 16-bit sum of an x86 CPU without VNNI holds, so there the answer
    comes back clipped. Once per process (forked children inherit it: the CPU is the same)."""
    from onnx import TensorProto, helper, numpy_helper

    rows, depth, columns = 8, 384, 32
    activations = np.full((rows, depth), 255, dtype=np.uint8)
    weights = np.full((depth, columns), -128, dtype=np.int8)
    constants = [
        numpy_helper.from_array(weights, "w"),
        numpy_helper.from_array(np.asarray(1.0, dtype=np.float32), "unit"),
        numpy_helper.from_array(np.ones(columns, dtype=np.float32), "w_scale"),
        numpy_helper.from_array(np.asarray(128, dtype=np.uint8), "middle"),
    ]
    node = helper.make_node(
        "MatMulIntegerToFloat", ["a", "w", "unit", "w_scale", "middle"], ["y"], domain="com.microsoft"
    )
    graph = helper.make_graph(
        [node],
        "probe",
        [helper.make_tensor_value_info("a", TensorProto.UINT8, [rows, depth])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [rows, columns])],
        constants,
    )
    (got,) = _one_thread_session(_serialized(graph)).run(None, {"a": activations})
    return bool((got == np.float32((255 - 128) * -128 * depth)).all())


@dataclass(frozen=True)
class Reader:
    """The fine-tuned encoder, its head, its tokenizer and its threshold (a logit)."""

    words: np.ndarray  # (vocab, hidden) int8
    word_scales: np.ndarray  # (vocab,)
    positions: np.ndarray  # (max positions, hidden) float32, token type 0 added
    embed_norm: tuple[np.ndarray, np.ndarray]
    encoder: bytes  # the layers as an ONNX model (encoder_graph)
    head_weight: np.ndarray  # (hidden,)
    head_bias: float
    threshold: float  # the vote's cut on the best window's logit
    floor: float  # the ranking head's logit a window must reach to be read
    count: int  # how many of the head's best windows are read
    tokenizer: object  # tokenizers.Tokenizer
    heads: int = 12
    _sessions: dict[int, Any] = field(default_factory=dict, repr=False, compare=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    @classmethod
    def from_bytes(cls, artifact: bytes, tokenizer_json: bytes) -> Reader:
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_str(tokenizer_json.decode("utf-8"))
        tokenizer.no_padding()
        tokenizer.enable_truncation(MAX_TOKENS)
        with np.load(io.BytesIO(artifact)) as archive:
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
                encoder=encoder_graph(archive),
                heads=int(archive["heads"]),
                head_weight=archive["head.weight"].astype(np.float32),
                head_bias=float(archive["head.bias"]),
                threshold=float(archive["threshold"]),
                floor=float(archive["floor"]),
                count=int(archive["count"]),
                tokenizer=tokenizer,
            )

    def _session(self) -> Any:
        """This process's onnxruntime session: one thread, as a worker process holds one core.
        Made on first use in each process, so a session loaded before the pool forks (preload)
        is never used in a child."""
        pid = os.getpid()
        session = self._sessions.get(pid)
        if session is None:
            with self._lock:
                session = self._sessions.get(pid)
                if session is None:
                    session = _one_thread_session(self.encoder)
                    self._sessions[pid] = session
        return session

    def token_ids(self, texts: list[str]) -> list[list[int]]:
        return [encoding.ids for encoding in self.tokenizer.encode_batch(texts)]  # type: ignore[attr-defined]

    def logits(self, texts: list[str]) -> np.ndarray:
        """One logit per text (a window), harmful above ``threshold``. Each window is read as a
        batch of its own: no padding to the longest (a tenth of a diff's tokens were padding),
        and a window's logit is the same whatever is read beside it."""
        logits = [self._logit(np.asarray(ids, dtype=np.int64)) for ids in self.token_ids(texts)]
        return np.array(logits, dtype=np.float32)

    def forward(self, tokens: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """The logit of each row of a batch of token ids padded at the end (``mask``: 1.0 for a
        token, 0.0 for padding), each row read alone, as :meth:`logits` reads a window."""
        lengths = mask.sum(1).astype(np.int64)
        if not all(n and mask[row, :n].all() and not mask[row, n:].any() for row, n in enumerate(lengths)):
            raise ValueError(
                "the reader's batches are padded at the end of each row, and every row holds a token"
            )
        return np.array(
            [self._logit(row[:n]) for row, n in zip(tokens, lengths, strict=True)], dtype=np.float32
        )

    def _logit(self, ids: np.ndarray) -> float:
        """The logit of one window's token ids: its last layer's states, mean-pooled, through the head."""
        x = self.words[ids].astype(np.float32) * self.word_scales[ids][..., None]
        x = _layer_norm(x + self.positions[: len(ids)], *self.embed_norm)
        (states,) = self._session().run(None, {"x": x})
        return float(states.mean(0) @ self.head_weight + self.head_bias)


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
