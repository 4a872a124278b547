"""Train the ``lexical`` detector of one policy and write ``worker/weights/<policy>/lexical.npz``."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from sklearn.linear_model import SGDClassifier

from worker.detectors.local.lexical import ARTIFACT
from worker.detectors.local.ngrams import featurize
from worker.detectors.local.windows import window_spans
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

BITS = 20
SEED = 0
LABELLED_CAP = 64 * 1024  # the datasets' records are cut at 64 KB: the lexical window null's reference


@dataclass(frozen=True)
class LexicalRecipe:
    """Window geometry, regularisation and MIL settings of one policy's lexical model."""

    window: int
    overlap: int
    alpha: float = 1e-5
    epochs: int = 20
    mil: MilConfig = MilConfig()
    # Read a diff without its removed lines (worker.core.views.added_view), in training and, through
    # the artifact's flag, at scan time: a release that deletes a clipper is not a clipper.
    added_only: bool = True


RECIPES: dict[str, LexicalRecipe] = {
    # Injections are a sentence or two: small windows keep them from being diluted by the
    # benign text around them. 256-byte windows scored the same on train-CV (FNR+FPR 0.40 vs
    # 0.41) at twice the scan cost, so 512 it is. MIL margin 0.25 (default 1.0): a harmful artifact's
    # windows stay positive only near its best window, so the benign template around a planted
    # instruction (a WHOIS record, an email) is no longer learnt as harmful. Train group-CV of the
    # simulated quorum, weighted FNR+FPR+code-FPR: margin 1.0 0.2311, 0.5 0.2199, 0.25 0.2173.
    # Both read their best window against the window count (worker.detectors.local.scan_statistic), as
    # the semantic heads do: the best of a release's thousands of windows otherwise rises with length
    # alone (20 MB of train's harmless diffs concatenated voted harmful; the lexical vote was in all
    # 11 false blocks of benchmarks/releases/fresh-releases.txt). The reference length is the labelled
    # diffs' cap, LABELLED_CAP (171 and 19 windows of each recipe's geometry, set in train_lexical):
    # no train artifact is longer (35 and 19 windows at most, the borrowed code negatives included),
    # so on train the vote is a monotone reading of its best window (the same artifacts on either
    # side of the same quorum cut, the weights unchanged), and only what is longer than anything
    # labelled is discounted. Train cannot tell apart references
    # of 35 windows or more; train's longest (35) for prompt-injection cost injections planted in
    # 64 KB of release diff (benchmarks/planted.py: 25 more missed of 246, 5 fewer false alarms).
    "prompt-injection": LexicalRecipe(
        window=512,
        overlap=128,
        mil=MilConfig(margin=0.25, scan_statistic=1.0),
    ),
    # Malicious code is a hook or a function: a few KB of diff is one unit.
    "malicious-package": LexicalRecipe(
        window=4096,
        overlap=512,
        epochs=10,
        mil=MilConfig(rounds=1, group_power=MALWARE_GROUP_POWER, scan_statistic=1.0),
    ),
}


def window_matrix(windows: list[str]) -> sp.csr_matrix:
    """The sparse feature rows of ``windows``, built by the run-time featurizer."""
    rows, buckets, values = [], [], []
    for start in range(0, len(windows), 256):
        r, b, v = featurize(windows[start : start + 256], BITS)
        rows.append(r + start)
        buckets.append(b)
        values.append(v)
    matrix = sp.csr_matrix(
        (np.concatenate(values), (np.concatenate(rows), np.concatenate(buckets))),
        shape=(len(windows), 1 << BITS),
        dtype=np.float32,
    )
    return matrix


def _classifier(recipe: LexicalRecipe, seed: int = SEED) -> SGDClassifier:
    return SGDClassifier(
        loss="log_loss",
        alpha=recipe.alpha,
        max_iter=recipe.epochs,
        tol=None,
        average=True,
        random_state=seed,
    )


def train_lexical(
    policy: str, train: Corpus, out_dir: Path, run: RunOptions = DEFAULT_RUN
) -> MilFit[SGDClassifier]:
    """Cross-validate on ``train`` by group, pick the threshold, fit on all of it, write the artifact;
    ``run``: the options of this training run."""
    recipe = RECIPES[policy]
    windows, owner = explode(train.texts, recipe.window, recipe.overlap, recipe.added_only)
    matrix = window_matrix(windows)
    known = known_windows(windows, owner, train) if run.witnesses else None
    del windows
    if run.log:
        print(f"[lexical:{policy}] {matrix.shape[0]} windows, {matrix.nnz} non-zeros")
    reference = float(len(window_spans(LABELLED_CAP, recipe.window, recipe.overlap)))
    mil = replace(recipe.mil, train_on_copies=run.train_on_copies, reference_windows=reference)
    fit = cross_validate_and_fit(lambda: _classifier(recipe, run.seed), matrix, owner, train, mil, known)
    write_artifact(
        out_dir / policy / ARTIFACT,
        fit,
        recipe.window,
        recipe.overlap,
        weights=fit.model.coef_.reshape(-1).astype(np.float16),
        bias=np.float32(fit.model.intercept_[0]),
        bits=np.int32(BITS),
        added_only=np.bool_(recipe.added_only),
    )
    return fit
