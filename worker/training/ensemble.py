"""Pick the model thresholds for the policy's quorum, not for each model alone.

Each model's own threshold minimises its FNR + FPR; but the gate decides with a
quorum (default: pre-check decisive → harmful; else 2 of rules, lexical,
semantic). With a precise rules voter, the best model thresholds are the ones
that minimise the *ensemble's* errors. This simulates the local quorum on the
out-of-fold model scores and the rules scores of the training split, searches a
grid of threshold pairs, and returns the best. Train only; dev is never read.

Objective: FNR + FPR on the policy's own corpus + FPR on the extra code
negatives (a diff is a large share of what is gated) + FPR on the long README
documents (what a planted instruction hides in), each artifact weighted
``1/sqrt(group size)`` so a big family does not decide alone. The quorum's FNR
and FPR on the records' planted copies (records inside code) are reported
beside it, and count in it only when asked (``planted_weight``).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from policies.loader import load_policy
from worker.core.precheck import scan_policy
from worker.detectors.local.rules import DEFAULT_RATIO
from worker.training.data import CODE_GROUP_PREFIX, Corpus, long_mask, own_mask, planted_mask

GRID = 80  # candidate thresholds per model (quantiles of its out-of-fold scores)
# A quorum member must stay a vote: with a precise rules voter the search would otherwise loosen a
# weak model until it says "harmful" to half the harmless diffs, and 2-of-3 silently becomes "any
# rules vote". The highest (weighted, own-negatives) false-positive rate a model's threshold may
# have. Uncapped, the malicious-package semantic vote flagged 53% of the train negatives (and a plain
# version bump) for 0.4 pp of weighted FNR; the prompt-injection one was set at p=4e-6.
VOTE_FPR_CAP = 0.4


@dataclass(frozen=True)
class EnsembleChoice:
    lexical_logit: float
    semantic_logit: float
    fnr: float
    fpr: float
    code_fpr: float
    long_fpr: float = 0.0  # FPR on the long README documents (a carrier's false alarm)
    planted_fnr: float = 0.0  # FNR and FPR on the planted copies (reported; optimised only if weighted)
    planted_fpr: float = 0.0


def rules_scores(policy_id: str, texts: list[str]) -> np.ndarray:
    """The pre-check score of every text under the policy's rulesets."""
    policy = load_policy(policy_id)
    return np.array([scan_policy(text.encode("utf-8"), policy).score for text in texts])


def _weights(groups: list[str], counted: np.ndarray, power: float = 0.5) -> np.ndarray:
    """``1/sqrt(group size)``, the size counting only the ``counted`` artifacts (not planted copies)."""
    sizes = Counter(g for g, c in zip(groups, counted, strict=True) if c)
    return np.array([sizes[g] ** -power for g in groups])


def _rate(wrong: np.ndarray, weights: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Weighted error rate over ``mask`` for every grid column of ``wrong`` (n x k)."""
    w = weights[mask]
    rates: np.ndarray = (wrong[mask] * w[:, None]).sum(axis=0) / max(w.sum(), 1e-12)
    return rates


def choose_ensemble_thresholds(
    policy_id: str,
    train: Corpus,
    lexical_oof: np.ndarray,
    semantic_oof: np.ndarray,
    planted_weight: float = 0.0,
) -> EnsembleChoice:
    """The (lexical, semantic) logit thresholds that minimise the simulated quorum's errors; the
    planted copies' FNR + FPR count ``planted_weight`` times in the objective (0: reported only)."""
    policy = load_policy(policy_id)
    block = policy.precheck.block_score
    rules = rules_scores(policy_id, train.texts)
    decisive = rules >= block
    rules_vote = (rules >= DEFAULT_RATIO * block).astype(np.int8)
    labels = np.asarray(train.labels)
    code = np.array([g.startswith(CODE_GROUP_PREFIX) for g in train.groups])
    planted = planted_mask(train)
    weights = _weights(train.groups, ~planted)
    own, long = own_mask(train), long_mask(train)
    positive, negative, code_negative = (labels == 1) & own, (labels == 0) & own & ~long, (labels == 0) & code
    long_negative = (labels == 0) & long
    planted_positive, planted_negative = planted & (labels == 1), planted & (labels == 0)
    grid = np.linspace(0.0, 1.0, GRID)
    lex_cuts = _capped(np.quantile(lexical_oof[own], grid), lexical_oof, weights, negative)
    sem_cuts = _capped(np.quantile(semantic_oof[own], grid), semantic_oof, weights, negative)
    lex_votes = (lexical_oof[:, None] >= lex_cuts[None, :]).astype(np.int8)  # n x G
    best: EnsembleChoice | None = None
    best_cost = np.inf
    for sem_cut in sem_cuts:
        sem_vote = (semantic_oof >= sem_cut).astype(np.int8)
        harmful = decisive[:, None] | ((rules_vote + sem_vote)[:, None] + lex_votes >= policy.quorum.required)
        fnr = _rate(~harmful, weights, positive)
        fpr = _rate(harmful, weights, negative)
        code_fpr = _rate(harmful, weights, code_negative) if code_negative.any() else np.zeros(len(lex_cuts))
        long_fpr = _rate(harmful, weights, long_negative) if long_negative.any() else np.zeros(len(lex_cuts))
        planted_fnr = _rate(~harmful, weights, planted_positive)  # zeros without copies
        planted_fpr = _rate(harmful, weights, planted_negative)
        cost = fnr + fpr + code_fpr + long_fpr + planted_weight * (planted_fnr + planted_fpr)
        i = int(np.argmin(cost))
        if cost[i] < best_cost:
            best_cost = float(cost[i])
            best = EnsembleChoice(
                float(lex_cuts[i]),
                float(sem_cut),
                float(fnr[i]),
                float(fpr[i]),
                float(code_fpr[i]),
                float(long_fpr[i]),
                float(planted_fnr[i]),
                float(planted_fpr[i]),
            )
    assert best is not None
    return best


def _capped(cuts: np.ndarray, scores: np.ndarray, weights: np.ndarray, negative: np.ndarray) -> np.ndarray:
    """The candidate cuts at which the model alone flags at most ``VOTE_FPR_CAP`` of the negatives."""
    allowed = _rate((scores[:, None] >= cuts[None, :]), weights, negative) <= VOTE_FPR_CAP
    return cuts[allowed] if allowed.any() else cuts[-1:]


def store_threshold(path: Path, logit: float) -> None:
    """Rewrite an artifact's run-time ``threshold`` (a probability), keeping the old one as ``threshold_alone``."""
    with np.load(path) as archive:
        arrays = {key: archive[key] for key in archive.files}
    arrays.setdefault("threshold_alone", arrays["threshold"])
    arrays["threshold"] = np.float32(1.0 / (1.0 + np.exp(-logit)))
    np.savez_compressed(path, **arrays)
