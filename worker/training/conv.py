"""Train the order-aware :class:`~worker.detectors.local.embedding.ConvHead` with torch on CPU.

The window model of a semantic recipe with ``head="conv"``. Its input is a window's token ids
(the run-time tokenizer, unknown tokens dropped), so training and scanning read the same
sequence; scores for thresholds come from the numpy head itself, as at scan time.

Multiple-instance training happens inside one fit (``MilConfig(rounds=0)`` around it): the first
epoch treats every window of a harmful artifact as harmful; then only its witnesses stay (windows
whose logit is within ``margin`` of the artifact's best), and the remaining epochs train on those
and on every harmless window. The artifact of each window rides in column 0 of ``x``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from worker.detectors.local.embedding import ConvHead, StaticEmbedding

SEED = 0
PAD = -1


@dataclass(frozen=True)
class ConvConfig:
    """Sizes and schedule of the head (the defaults train prompt-injection in minutes on 2 cores)."""

    proj: int = 48
    channels: int = 64
    hidden: int = 32
    # The first on every window, the rest on witnesses and harmless windows. Six, measured on
    # 2026-11-29 against a rebuild of three on one machine: train group-CV head alone FNR / FPR
    # 20.9 / 14.7 -> 17.2 / 12.1 %, quorum objective 0.459 -> 0.437 (long FPR 0.3 -> 0.5 %); reported:
    # planted 1 / 8 / 64 KB 87.0 / 78.5 / 72.8 -> 87.8 / 81.3 / 75.6 %, but carriers alone at 64 KB
    # 2.9 -> 3.6 % (the shipped head 1.4 %) and 16 KB JSON answers alone 10.5 % (shipped 5.5 %); dev
    # and short sentences the same. Not shipped: long documents' false alarms past the 2 % target.
    # With --long-scored 300 too, the cuts give that recall back (64 KB 70.3 %; docs/measurements.md).
    epochs: int = 3
    margin: float = 1.0
    batch: int = 256
    lr: float = 2e-3
    weight_decay: float = 1e-4
    # torch's intra-op threads while fitting: CPU kernels split their float sums by thread count, so
    # the weights depend on it (deterministic algorithms make them depend on nothing else).
    threads: int = 2
    seed: int = SEED  # torch's initial weights and the batch order


def token_matrix(windows: list[str], owner: np.ndarray, embedding: StaticEmbedding) -> np.ndarray:
    """``(windows, 1 + longest)`` int32: the owning artifact, then the token ids, padded with -1."""
    rows: list[np.ndarray] = []
    for start in range(0, len(windows), 4096):
        rows.extend(embedding.token_ids(windows[start : start + 4096]))
    width = max((row.size for row in rows), default=0)
    x = np.full((len(rows), 1 + width), PAD, dtype=np.int32)
    x[:, 0] = owner
    for index, row in enumerate(rows):
        x[index, 1 : 1 + row.size] = row
    return x


def _ids(x: np.ndarray) -> list[np.ndarray]:
    return [row[row != PAD].astype(np.int64) for row in x[:, 1:]]


class ConvTrainer:
    """A :class:`worker.training.mil.WindowModel` over :func:`token_matrix` rows."""

    def __init__(self, vectors: np.ndarray, config: ConvConfig) -> None:
        self.vectors = np.asarray(vectors, dtype=np.float32)  # the embedding keeps them float16
        self.config = config
        self.state: dict[str, Any] | None = None

    def _module(self) -> Any:
        import torch
        from torch import nn

        config, dim = self.config, self.vectors.shape[1]

        class Net(nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.proj = nn.Linear(dim, config.proj, bias=False)
                self.conv1 = nn.Conv1d(config.proj, config.channels, 3, padding=1)
                self.conv2 = nn.Conv1d(config.channels, config.channels, 3, padding=2, dilation=2)
                self.dense0 = nn.Linear(config.channels + config.proj, config.hidden)
                self.dense1 = nn.Linear(config.hidden, 1)

            def forward(self, vectors: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
                mask = (ids != PAD).float()
                unique, inverse = torch.unique(ids.clamp(min=0), return_inverse=True)
                tokens = self.proj(vectors[unique])[inverse] * mask[..., None]  # (B, T, proj)
                first = torch.relu(self.conv1(tokens.transpose(1, 2))) * mask[:, None]
                second = torch.relu(self.conv2(first)) * mask[:, None]
                pooled = torch.cat(
                    [second.amax(dim=2), tokens.sum(dim=1) / mask.sum(dim=1, keepdim=True).clamp(min=1.0)],
                    dim=1,
                )
                logits: torch.Tensor = self.dense1(torch.relu(self.dense0(pooled))).squeeze(1)
                return logits

        return Net()

    def fit(self, x: np.ndarray, y: np.ndarray, sample_weight: np.ndarray) -> ConvTrainer:
        """Fit with ``config.threads`` threads and torch's deterministic algorithms, so one command
        rebuilds the same weights (two fits with the torch defaults, on 2 cores: two heads)."""
        import torch

        threads, deterministic = torch.get_num_threads(), torch.are_deterministic_algorithms_enabled()
        torch.set_num_threads(self.config.threads)
        torch.use_deterministic_algorithms(True)
        try:
            return self._fit(x, y, sample_weight)
        finally:
            torch.set_num_threads(threads)
            torch.use_deterministic_algorithms(deterministic)

    def _fit(self, x: np.ndarray, y: np.ndarray, sample_weight: np.ndarray) -> ConvTrainer:
        import torch

        torch.manual_seed(self.config.seed)
        rng = np.random.default_rng(self.config.seed)
        net = self._module()
        vectors = torch.from_numpy(self.vectors)
        optimizer = torch.optim.Adam(
            net.parameters(), lr=self.config.lr, weight_decay=self.config.weight_decay
        )
        lengths = (x[:, 1:] != PAD).sum(axis=1)
        keep = np.ones(len(y), dtype=bool)
        for epoch in range(self.config.epochs):
            if epoch == 1:
                keep = self._witnesses(net, vectors, x, y, lengths)
            net.train()
            for batch in _batches(np.flatnonzero(keep), lengths, self.config.batch, rng):
                width = max(1, int(lengths[batch].max()))
                ids = torch.from_numpy(x[batch, 1 : 1 + width].astype(np.int64))
                weight = torch.from_numpy(sample_weight[batch].astype(np.float32))
                target = torch.from_numpy(y[batch].astype(np.float32))
                loss = torch.nn.functional.binary_cross_entropy_with_logits(
                    net(vectors, ids), target, weight=weight
                )
                optimizer.zero_grad()
                loss.backward()  # type: ignore[no-untyped-call]
                optimizer.step()
        self.state = {name: value.detach().numpy().copy() for name, value in net.state_dict().items()}
        return self

    def _witnesses(
        self, net: Any, vectors: Any, x: np.ndarray, y: np.ndarray, lengths: np.ndarray
    ) -> np.ndarray:
        """Harmless windows, and the harmful windows within ``margin`` of their artifact's best."""
        import torch

        net.eval()
        harmful = np.flatnonzero(y == 1)
        logits = np.zeros(len(y), dtype=np.float32)
        with torch.no_grad():
            for batch in _batches(harmful, lengths, 1024, None):
                width = max(1, int(lengths[batch].max()))
                ids = torch.from_numpy(x[batch, 1 : 1 + width].astype(np.int64))
                logits[batch] = net(vectors, ids).numpy()
        owners = x[:, 0].astype(np.int64)
        best = np.full(int(owners.max()) + 1, -np.inf, dtype=np.float32)
        np.maximum.at(best, owners[harmful], logits[harmful])
        kept: np.ndarray = (y == 0) | (logits >= best[owners] - self.config.margin)
        return kept

    def arrays(self) -> dict[str, Any]:
        """The run-time artifact's arrays (see :class:`ConvHead`)."""
        if self.state is None:
            raise RuntimeError("fit first")
        s = self.state
        return {
            "head": np.str_("conv"),
            "proj": s["proj.weight"].T.astype(np.float32),
            "conv1": _taps(s["conv1.weight"]),
            "bias1": s["conv1.bias"].astype(np.float32),
            "conv2": _taps(s["conv2.weight"]),
            "bias2": s["conv2.bias"].astype(np.float32),
            "layers": np.int32(2),
            "w0": s["dense0.weight"].T.astype(np.float32),
            "b0": s["dense0.bias"].astype(np.float32),
            "w1": s["dense1.weight"].T.astype(np.float32),
            "b1": s["dense1.bias"].astype(np.float32),
        }

    def head(self) -> ConvHead:
        """The run-time head, built from the artifact's arrays as the detector builds it."""
        return ConvHead.from_archive(self.arrays(), self.vectors)

    def decision_function(self, x: np.ndarray) -> np.ndarray:
        """Logits computed by the run-time :class:`ConvHead`, so training and scanning agree."""
        head = self.head()
        out = np.zeros(len(x), dtype=np.float64)
        for start in range(0, len(x), 2048):
            out[start : start + 2048] = head.logits(_ids(x[start : start + 2048]))
        return out


def _taps(weight: np.ndarray) -> np.ndarray:
    """torch's ``(out, in, 3)`` kernel as :class:`ConvHead` stacks it: ``(3 * in, out)``."""
    return np.concatenate([weight[:, :, tap].T for tap in range(weight.shape[2])], axis=0).astype(np.float32)


def _batches(
    indices: np.ndarray, lengths: np.ndarray, size: int, rng: np.random.Generator | None
) -> list[np.ndarray]:
    """Batches of similar length (little padding): shuffled, sorted by length within chunks of 50
    batches, the batches shuffled again; in order of length when ``rng`` is None."""
    if rng is None:
        ordered = indices[np.argsort(lengths[indices], kind="stable")]
        return [ordered[i : i + size] for i in range(0, len(ordered), size)]
    shuffled = rng.permutation(indices)
    batches: list[np.ndarray] = []
    chunk = size * 50
    for start in range(0, len(shuffled), chunk):
        part = shuffled[start : start + chunk]
        part = part[np.argsort(lengths[part], kind="stable")]
        batches.extend(part[i : i + size] for i in range(0, len(part), size))
    order = rng.permutation(len(batches))
    return [batches[i] for i in order]
