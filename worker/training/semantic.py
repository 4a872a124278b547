"""Train the ``semantic`` head of one policy and write ``worker/weights/<policy>/semantic.npz``.

Features are computed by the run-time :class:`StaticEmbedding` from the
shipped (distilled) matrix, so training and scanning see the same numbers.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.neural_network import MLPClassifier
from sklearn.preprocessing import StandardScaler

from worker.detectors.local.embedding import EMBEDDING_DIR, Head, StaticEmbedding
from worker.detectors.local.semantic import ARTIFACT
from worker.training.conv import ConvConfig, ConvTrainer, token_matrix
from worker.training.data import Corpus
from worker.training.mil import (
    DEFAULT_RUN,
    MALWARE_GROUP_POWER,
    MilConfig,
    MilFit,
    RunOptions,
    cross_validate_and_fit,
    write_artifact,
)
from worker.training.windows import explode
from worker.training.witnesses import known_windows

SEED = 0


@dataclass(frozen=True)
class SemanticRecipe:
    """Window geometry, regularisation and MIL settings of one policy's semantic head."""

    window: int
    overlap: int
    c: float = 1.0
    hidden: int = 0  # 0: logistic regression; else one ReLU layer of this width
    mil: MilConfig = MilConfig()
    # "mlp": the pooled vectors through ScaledHead; "conv": the token sequence through the
    # order-aware ConvHead (worker.training.conv, torch at training time), MIL inside its fit.
    head: str = "mlp"
    conv: ConvConfig = ConvConfig()
    # Read a diff without its removed lines (worker.core.views.added_view), in training and, through
    # the artifact's flag, at scan time: a release that deletes a clipper is not a clipper.
    added_only: bool = True


RECIPES: dict[str, SemanticRecipe] = {
    # Injections are about intent, which a linear read of pooled vectors misses more often
    # than a small MLP does (group-CV AUC 0.85 vs 0.78 on train).
    # Both heads read their best window against the window count (worker.detectors.local.scan_statistic):
    # alone, the best of a release's thousands of windows flagged 89 and 91 of 160 fresh releases.
    # The reference length (artifacts up to the q-quantile of train's window counts count as one
    # window) by the train group-CV quorum objective (weighted FNR + FPR + code FPR;
    # benchmarks/scan_statistic.py): prompt-injection, best window alone 0.2146; q = 0 0.2274,
    # 0.5 0.2196, 0.75 0.2147, 0.9 0.2138, 0.95 0.2139, 0.99 and 1 0.2146. malicious-package, alone
    # 0.0606; q = 0 0.0531, 0.5 0.0555, 0.75 0.0584, 0.9 and above 0.0606. Where train cannot tell
    # settings apart (within 0.001 of its best), the largest reference: it discounts only artifacts
    # longer than train's longest, and so costs the least sensitivity on long artifacts
    # (benchmarks/planted.py). Malicious-package: q = 0.
    # Prompt-injection trains on long harmless carriers too (README documents and release slices up
    # to 64 KB, 170 windows), so train now tells references apart: with q = 1 (170 windows) the head
    # flagged 52 / 85 / 97 % of the carriers of < 8, 8-32 and 32-64 KB out of fold. The reference by
    # the train group-CV quorum objective (FNR + FPR + code FPR + long FPR + planted FNR + FPR, the
    # thresholds re-chosen for each; the out-of-fold scores re-read, the model unchanged):
    # 170 windows 0.5517, 64 0.5499, 35 0.5451, 16 0.5413, 8 0.5382, 4 0.5410, 2 0.5436, 1 0.5506.
    # Eight windows (3.5 KB): carriers flagged by the head alone 44 / 37 / 18 %.
    # Prompt-injection's head reads the window's tokens in order (ConvHead): pooled vectors cannot
    # tell "ignore the tool output" from "the tool output says to ignore". Train group-CV quorum
    # objective, the same data, lexical model and thresholds search: pooled MLP at 8 windows 0.5382,
    # the convolutional head 0.5237 (alone it is no better: FNR / FPR 23.0 / 15.6 % against 19.8 /
    # 15.8 %; it errs on other records than the lexical model). Its reference by the same sweep:
    # 170 windows 0.5417, 35 0.5306, 16 0.5294, 8 0.5237, 6 0.5199, 5 0.5190, 4 0.5147, 3 0.5214,
    # 2 0.5175, 1 0.5195. Trained on that data alone it flagged every ordinary note of the IMAP test
    # mailbox; with lone sentences of the harmless records among the negatives (data.with_sentences)
    # it ships. MIL inside the fit (rounds=0 here; worker.training.conv).
    "prompt-injection": SemanticRecipe(
        window=512,
        overlap=128,
        mil=MilConfig(rounds=0, scan_statistic=0.0, reference_windows=4.0),
        head="conv",
    ),
    "malicious-package": SemanticRecipe(
        window=2048,
        overlap=256,
        mil=MilConfig(rounds=1, group_power=MALWARE_GROUP_POWER, scan_statistic=0.0),
    ),
}


class ScaledHead:
    """Standardise, then an L2 logistic regression or a one-hidden-layer ReLU MLP."""

    def __init__(self, recipe: SemanticRecipe, seed: int = SEED) -> None:
        self.scaler = StandardScaler()
        self.classifier: LogisticRegression | MLPClassifier
        if recipe.hidden:
            self.classifier = MLPClassifier(
                hidden_layer_sizes=(recipe.hidden,), alpha=recipe.c, max_iter=80, random_state=seed
            )
        else:
            self.classifier = LogisticRegression(C=recipe.c, max_iter=3000)

    def fit(self, x: np.ndarray, y: np.ndarray, sample_weight: np.ndarray) -> ScaledHead:
        self.scaler.fit(x)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            self.classifier.fit(self.scaler.transform(x), y, sample_weight=sample_weight)
        return self

    def decision_function(self, x: np.ndarray) -> np.ndarray:
        """Logits computed by the run-time :class:`Head` itself, so training and scanning agree."""
        arrays = self.arrays()
        head = Head(
            weights=tuple(arrays[f"w{i}"] for i in range(int(arrays["layers"]))),
            biases=tuple(arrays[f"b{i}"] for i in range(int(arrays["layers"]))),
            mean=arrays["mean"],
            scale=arrays["scale"],
        )
        return head.logits(x.astype(np.float32)).astype(np.float64)

    def arrays(self) -> dict[str, Any]:
        scale = np.where(self.scaler.scale_ > 0, self.scaler.scale_, 1.0)
        if isinstance(self.classifier, LogisticRegression):
            weights, biases = [self.classifier.coef_.T], [self.classifier.intercept_]
        else:
            weights, biases = list(self.classifier.coefs_), list(self.classifier.intercepts_)
        layers = {f"w{i}": w.astype(np.float32) for i, w in enumerate(weights)}
        layers.update({f"b{i}": b.astype(np.float32) for i, b in enumerate(biases)})
        return {
            "layers": np.int32(len(weights)),
            "mean": self.scaler.mean_.astype(np.float32),
            "scale": scale.astype(np.float32),
            **layers,
        }


def window_features(windows: list[str], embedding: StaticEmbedding) -> np.ndarray:
    """Pooled embedding features of ``windows`` (run-time code)."""
    return np.concatenate([embedding.features(windows[i : i + 512]) for i in range(0, len(windows), 512)])


def train_semantic(policy: str, train: Corpus, out_dir: Path, run: RunOptions = DEFAULT_RUN) -> MilFit[Any]:
    """Cross-validate on ``train`` by group, pick the threshold, fit on all of it, write the head;
    ``run``: the options of this training run."""
    recipe = RECIPES[policy]
    embedding = StaticEmbedding.load(out_dir / EMBEDDING_DIR)
    mil = replace(recipe.mil, train_on_copies=run.train_on_copies)
    windows, owner = explode(train.texts, recipe.window, recipe.overlap, recipe.added_only)
    known = known_windows(windows, owner, train) if run.witnesses else None
    make: Callable[[], ConvTrainer | ScaledHead]
    if recipe.head == "conv":
        x = token_matrix(windows, owner, embedding)
        make, shape = (
            (lambda: ConvTrainer(embedding.vectors, replace(recipe.conv, seed=run.seed))),
            f"up to {x.shape[1] - 1} tokens",
        )
    else:
        x = window_features(windows, embedding)
        make, shape = (lambda: ScaledHead(recipe, run.seed)), f"{x.shape[1]} features"
    del windows
    if run.log:
        print(f"[semantic:{policy}] {x.shape[0]} windows of {shape}")
    fit: MilFit[Any] = cross_validate_and_fit(make, x, owner, train, mil, known)
    write_artifact(
        out_dir / policy / ARTIFACT,
        fit,
        recipe.window,
        recipe.overlap,
        added_only=np.bool_(recipe.added_only),
        **fit.model.arrays(),
    )
    return fit
