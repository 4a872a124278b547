"""Multiple-instance training on windows, group-aware out-of-fold scores and thresholds.

A labelled artifact becomes several windows but only one label: a harmful
email may hold its injection in one window out of ten. We train the window
model as multiple-instance learning (MI-SVM style): every window of a harmless
artifact is a negative; at first every window of a harmful artifact is a
positive, then for ``rounds`` rounds only the witnesses stay positive (the
windows whose logit is within ``margin`` of that artifact's best window).
The artifact's score is its best window, exactly as at scan time (read against
the number of windows where the config asks for the scan statistic).

Training groups are unequal (one jailbreak corpus is a fifth of the
prompt-injection data): each artifact is weighted ``1 / group_size**power`` so
no family drowns the others, and the two classes carry equal total weight.
Thresholds come from out-of-fold scores of a :class:`GroupKFold` on the
``group`` field, never from dev.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Generic, Protocol, TypedDict, TypeVar

import numpy as np
from sklearn.model_selection import GroupKFold

from worker.detectors.local.scan_statistic import WindowNull
from worker.training.data import Corpus, own_mask, planted_mask, scored_mask
from worker.training.witnesses import HARMFUL, HARMLESS, LEFT_OUT

# Malicious-package groups are packages (mostly of one record) and GuardDog rules (up to ~70
# fixtures each): weighting 1/size would drown the GuardDog families, 1/sqrt(size) does not.
MALWARE_GROUP_POWER = 0.5


class WindowModel(Protocol):
    def fit(self, x: Any, y: np.ndarray, sample_weight: np.ndarray) -> Any: ...

    def decision_function(self, x: Any) -> np.ndarray: ...


ModelT = TypeVar("ModelT", bound=WindowModel)


@dataclass(frozen=True)
class MilConfig:
    rounds: int = 2
    margin: float = 1.0
    group_power: float = 1.0
    folds: int = 5
    # Read the best window against the number of windows (a WindowNull fitted on the out-of-fold
    # logits of harmless windows) instead of on its own: see worker.detectors.local.scan_statistic.
    # None: off; else the quantile of the policy's training artifacts' window counts up to which an
    # artifact counts as one window (0.0: every window counts).
    scan_statistic: float | None = None
    # With a scan statistic: a reference length in windows that overrides a shorter quantile (train
    # cannot choose among references longer than its longest artifact: they all read it the same).
    reference_windows: float | None = None
    # Planted copies of the records (worker.training.data.with_planted_copies), if the corpus has
    # any: False, they are only scored out of fold, so the model is exactly the one trained without
    # them and training reports how it does on records inside code; True, they are trained on too.
    train_on_copies: bool = False


@dataclass(frozen=True)
class RunOptions:
    """What one run of ``python -m worker.training`` asks of every trainer beyond its recipe."""

    train_on_copies: bool = False  # MilConfig.train_on_copies
    # Label the windows of the planted copies by what they hold (worker.training.witnesses).
    witnesses: bool = False
    log: bool = True
    # The seed of every random choice a trainer makes (initial weights, sample order): a training
    # option is worth its name only if it wins over several seeds.
    seed: int = 0


DEFAULT_RUN = RunOptions()


def artifact_weights(groups: Sequence[str], labels: np.ndarray, power: float) -> np.ndarray:
    """Per-artifact weights: ``1/group_size**power``, each class summing to the same total."""
    sizes = Counter(groups)
    weights = np.array([sizes[g] ** -power for g in groups], dtype=np.float64)
    for label in (0, 1):
        mask = labels == label
        if mask.any():
            weights[mask] *= len(labels) / (2.0 * weights[mask].sum())
    return weights


def fitted_weights(
    groups: Sequence[str],
    labels: np.ndarray,
    config: MilConfig,
    copies: np.ndarray,
    scored: np.ndarray | None = None,
) -> np.ndarray:
    """:func:`artifact_weights` of the artifacts the model is fitted on (the copies only if
    ``config.train_on_copies``, never the ``scored`` ones), computed among them alone; 0 for the others."""
    fitted = np.ones(len(labels), dtype=bool) if config.train_on_copies else ~copies
    if scored is not None:
        fitted &= ~scored
    weights = np.zeros(len(labels))
    weights[fitted] = artifact_weights(
        [g for g, f in zip(groups, fitted, strict=True) if f], labels[fitted], config.group_power
    )
    return weights


def best_window(logits: np.ndarray, owner: np.ndarray, count: int) -> np.ndarray:
    """Each artifact's maximum window logit."""
    best = np.full(count, -np.inf)
    np.maximum.at(best, owner, logits)
    return best


def fit_mil(
    make: Callable[[], ModelT],
    x: Any,
    owner: np.ndarray,
    labels: np.ndarray,
    weights: np.ndarray,
    config: MilConfig,
    known: np.ndarray | None = None,
) -> ModelT:
    """Fit a window model on ``x`` (rows owned by artifacts ``owner``) by witness refinement;
    artifacts of weight 0 are left out. ``known`` (:func:`worker.training.witnesses.known_windows`)
    overrides the label of the windows whose content training knows, and leaves some out."""
    window_labels = labels[owner]
    window_weights = weights[owner]
    witnesses = np.zeros(len(owner), dtype=bool)
    if known is not None:
        window_labels = np.where((known == HARMLESS) | (known == HARMFUL), known, window_labels)
        window_weights = np.where(known == LEFT_OUT, 0.0, window_weights)
        witnesses = known == HARMFUL
    fitted = window_weights > 0
    keep = fitted
    model = make()
    for round_ in range(config.rounds + 1):
        model = make()
        kept_weights = window_weights[keep]
        model.fit(x[keep], window_labels[keep], sample_weight=kept_weights / kept_weights.mean())
        if round_ == config.rounds:
            break
        logits = model.decision_function(x)
        best = best_window(logits, owner, len(labels))
        keep = fitted & ((window_labels == 0) | witnesses | (logits >= best[owner] - config.margin))
    return model


def out_of_fold(
    make: Callable[[], WindowModel],
    x: Any,
    owner: np.ndarray,
    labels: np.ndarray,
    groups: Sequence[str],
    config: MilConfig,
    copies: np.ndarray | None = None,
    scored: np.ndarray | None = None,
    known: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Artifact scores (max window logit) and every window's logit, from models that never saw
    the artifact's group. The folds are those of the artifacts that are not ``copies``; a copy
    is in its group's fold (trained on only if ``config.train_on_copies``); the ``scored`` ones are
    never trained on; ``known``: as in :func:`fit_mil`."""
    copies = np.zeros(len(labels), dtype=bool) if copies is None else copies
    weights = fitted_weights(groups, labels, config, copies, scored)
    scores = np.zeros(len(labels))
    window_logits = np.zeros(len(owner))
    splitter = GroupKFold(n_splits=config.folds)
    by_group = np.asarray(groups)
    base = np.flatnonzero(~copies)
    for _, base_test in splitter.split(base, labels[base], by_group[base]):
        in_test_fold = np.isin(by_group, by_group[base[base_test]])
        train, test = np.flatnonzero(~in_test_fold), np.flatnonzero(in_test_fold)
        in_train = np.isin(owner, train)
        in_test = np.isin(owner, test)
        local = np.full(len(labels), -1)
        local[train] = np.arange(len(train))
        model = fit_mil(
            make,
            x[in_train],
            local[owner[in_train]],
            labels[train],
            weights[train],
            config,
            None if known is None else known[in_train],
        )
        window_logits[in_test] = model.decision_function(x[in_test])
        best = best_window(window_logits[in_test], owner[in_test], len(labels))
        scores[test] = best[test]
    return scores, window_logits


def window_null(
    window_logits: np.ndarray, owner: np.ndarray, labels: np.ndarray, own: np.ndarray, quantile: float
) -> WindowNull:
    """The null of the harmless windows' out-of-fold logits; artifacts up to the ``quantile`` of the
    policy's own artifacts' window counts count as one window."""
    counts = np.bincount(owner, minlength=len(labels))
    return WindowNull.fit(window_logits[labels[owner] == 0], float(np.quantile(counts[own], quantile)))


def choose_threshold(scores: np.ndarray, labels: np.ndarray) -> float:
    """The logit cut that minimises FNR + FPR on out-of-fold scores (midpoint between neighbours)."""
    candidates = np.unique(scores)
    positives = np.sort(scores[labels == 1])
    negatives = np.sort(scores[labels == 0])
    fnr = np.searchsorted(positives, candidates, side="left") / max(1, positives.size)
    fpr = 1.0 - np.searchsorted(negatives, candidates, side="left") / max(1, negatives.size)
    index = int(np.argmin(fnr + fpr))
    lower = candidates[index - 1] if index > 0 else candidates[index] - 1.0
    return float((lower + candidates[index]) / 2.0)


def error_rates(scores: np.ndarray, labels: np.ndarray, threshold: float) -> tuple[float, float]:
    """``(FNR, FPR)`` of ``scores >= threshold`` as harmful."""
    harmful = scores >= threshold
    fnr = float(np.mean(~harmful[labels == 1])) if (labels == 1).any() else 0.0
    fpr = float(np.mean(harmful[labels == 0])) if (labels == 0).any() else 0.0
    return fnr, fpr


class CvMetrics(TypedDict):
    """The out-of-fold metrics stored in a model artifact (keyword arguments of ``np.savez_compressed``)."""

    cv_fnr: np.float32
    cv_fpr: np.float32
    cv_accuracy: np.float32


def cv_metrics(scores: np.ndarray, labels: np.ndarray, threshold: float) -> CvMetrics:
    """Out-of-fold FNR, FPR and accuracy, stored in the artifact for the measuring script."""
    fnr, fpr = error_rates(scores, labels, threshold)
    accuracy = float(np.mean((scores >= threshold) == (labels == 1)))
    return {"cv_fnr": np.float32(fnr), "cv_fpr": np.float32(fpr), "cv_accuracy": np.float32(accuracy)}


@dataclass(frozen=True)
class OofWindows:
    """Where each artifact's best out-of-fold window lies: what the quorum simulation needs to
    read votes passage by passage (``quorum.colocate_bytes``) and to re-read the best window
    against another reference length."""

    best_logit: np.ndarray  # the best window's own logit, per artifact
    best_index: np.ndarray  # its index among the artifact's windows (-1: no window)
    counts: np.ndarray  # windows per artifact


def oof_windows(window_logits: np.ndarray, owner: np.ndarray, count: int) -> OofWindows:
    """Each artifact's best window (logit, index among its own windows) and window count."""
    counts = np.bincount(owner, minlength=count)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])  # ``owner`` is sorted (explode's order)
    best_logit = np.full(count, -np.inf)
    best_index = np.full(count, -1, dtype=np.int64)
    order = np.lexsort((np.arange(len(owner)), -window_logits, owner))  # per owner: best, earliest
    first = order[np.concatenate([[True], owner[order][1:] != owner[order][:-1]])] if len(order) else order
    best_logit[owner[first]] = window_logits[first]
    best_index[owner[first]] = first - starts[owner[first]]
    return OofWindows(best_logit=best_logit, best_index=best_index, counts=counts)


@dataclass(frozen=True)
class MilFit(Generic[ModelT]):
    """A window model fitted on all of train, with its group-CV out-of-fold scores and threshold."""

    model: ModelT
    oof_scores: np.ndarray  # artifact logits: the best window's, or its scan statistic (``null``)
    threshold_logit: float
    cv: CvMetrics
    null: WindowNull | None = None
    windows: OofWindows | None = None


def cross_validate_and_fit(
    make_model: Callable[[], ModelT],
    x: Any,
    owner: np.ndarray,
    train: Corpus,
    config: MilConfig,
    known: np.ndarray | None = None,
) -> MilFit[ModelT]:
    """Group-CV on ``train``, the threshold on the policy's own artifacts (borrowed code negatives
    train the model, not its threshold), then the model fitted on all of ``train``; ``known``: the
    window labels training knows (:func:`fit_mil`)."""
    labels = np.asarray(train.labels)
    copies, scored = planted_mask(train), scored_mask(train)
    oof, window_logits = out_of_fold(
        make_model, x, owner, labels, train.groups, config, copies, scored, known
    )
    null = None
    own = own_mask(train)
    if config.scan_statistic is not None:
        original = ~(copies | scored)[owner]  # the null is that of the harmless windows of the corpus itself
        null = window_null(window_logits[original], owner[original], labels, own, config.scan_statistic)
        if config.reference_windows is not None:
            null = replace(null, reference_windows=max(null.reference_windows, config.reference_windows))
        oof = null.artifact_logits(oof, np.bincount(owner, minlength=len(labels)))
    threshold = choose_threshold(oof[own], labels[own])
    weights = fitted_weights(train.groups, labels, config, copies, scored)
    model = fit_mil(make_model, x, owner, labels, weights, config, known)
    where = oof_windows(window_logits, owner, len(labels))
    return MilFit(model, oof, threshold, cv_metrics(oof[own], labels[own], threshold), null, where)


def write_artifact(path: Path, fit: MilFit[Any], window: int, overlap: int, **arrays: Any) -> None:
    """The run-time artifact: the model's ``arrays``, its window null if any, window geometry,
    threshold (a probability) and out-of-fold metrics."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if fit.null is not None:
        arrays = {**arrays, **fit.null.arrays()}
    np.savez_compressed(
        path,
        **arrays,
        window=np.int32(window),
        overlap=np.int32(overlap),
        threshold=np.float32(1.0 / (1.0 + np.exp(-fit.threshold_logit))),
        **fit.cv,
    )
