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

With ``passages`` (``python -m worker.training --passages``; not the shipped recipe), a policy
whose quorum reads votes passage by passage (``quorum.colocate_bytes``) is simulated so: given
where each model's best out-of-fold window lies (:class:`Passages`), two harmful votes add up only
if their places are that close (the rules' places are their evidence spans; places in a diff's
added-lines view and the raw bytes count as close; the gate places a model's window of the
added lines in the raw bytes since 2026-11-29, so it reads them apart more often). The simulation knows each
model's best window only, where a vote names its three best, so it reads votes apart a little
more often than the gate does. Then the semantic model's reference length (up to how many
windows an artifact reads as one, :mod:`worker.detectors.local.scan_statistic`) is chosen with
the thresholds, from ``SEMANTIC_REFERENCES``: the discount for length keeps a long harmless
document's false alarms down, and reading votes passage by passage does that too.
Run on 2026-11-29 (prompt-injection, seed 0; the models came out byte-identical to the shipped
ones): the reference stayed at 4 windows and only the lexical cut loosened, logit 4.81 -> 4.65
(objective 0.4483 -> 0.4438). With the gate reading votes passage by passage either way: dev
FN / FP 15 / 23 -> 14 / 23; planted bare 93.9 -> 94.3 %, 1 / 8 / 64 KB 87.4 / 78.9 / 72.8 ->
88.6 / 79.7 / 73.2 %, carriers alone unchanged (0.7 / 0.7 / 1.4 %); short harmless sentences
2.8 -> 3.4 %; the canonical look-alike "Thanks for the update! I'll review the document and get
back to you by Friday." quarantined. Not shipped: a point of recall for ordinary e-mail blocked.
With ``--long-scored 300`` as well (train attacks in 16-64 KB carriers and such carriers alone,
scored so that the search sees long positives): the reference again 4 windows, the lexical cut
4.45 (p = 0.9884, where a cut of 0.9886 once quarantined an ordinary note of the IMAP test
mailbox). Train does not trade the semantic discount for length for recall at 64 KB.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from policies.loader import load_policy
from worker.core.precheck import Scan, scan_policy
from worker.core.quorum import near
from worker.core.views import RAW, scanned_views
from worker.detectors.local.rules import DEFAULT_RATIO
from worker.detectors.local.scan_statistic import WindowNull
from worker.training.data import CODE_GROUP_PREFIX, Corpus, long_mask, own_mask, planted_mask
from worker.training.mil import MilFit, OofWindows

GRID = 80  # candidate thresholds per model (quantiles of its out-of-fold scores)
# A quorum member must stay a vote: with a precise rules voter the search would otherwise loosen a
# weak model until it says "harmful" to half the harmless diffs, and 2-of-3 silently becomes "any
# rules vote". The highest (weighted, own-negatives) false-positive rate a model's threshold may
# have. Uncapped, the malicious-package semantic vote flagged 53% of the train negatives (and a plain
# version bump) for 0.4 pp of weighted FNR; the prompt-injection one was set at p=4e-6.
VOTE_FPR_CAP = 0.4
# The semantic reference lengths (windows) tried with a passage-by-passage quorum; the recipe's own
# is always among them.
SEMANTIC_REFERENCES = (4.0, 8.0, 16.0, 35.0, 170.0)


@dataclass(frozen=True)
class Passages:
    """Where the two models' best out-of-fold windows lie, and the window geometry they share
    (both models of a policy cut the same windows), for a quorum with ``colocate_bytes``."""

    lexical: OofWindows
    semantic: OofWindows
    window: int
    overlap: int
    semantic_null: WindowNull | None = None  # to re-read the semantic scores at other references


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
    semantic_reference: float | None = None  # chosen with a passage-by-passage quorum, else None


def passages_of(policy_id: str, lexical: MilFit[Any], semantic: MilFit[Any]) -> Passages | None:
    """The :class:`Passages` of two fitted models, for a policy whose quorum reads votes passage by
    passage; None for another policy (or models without window positions)."""
    if load_policy(policy_id).quorum.colocate_bytes is None:
        return None
    if lexical.windows is None or semantic.windows is None:
        return None
    from worker.training.lexical import RECIPES as LEXICAL
    from worker.training.semantic import RECIPES as SEMANTIC

    geometry = {(LEXICAL[policy_id].window, LEXICAL[policy_id].overlap, LEXICAL[policy_id].added_only)}
    geometry.add((SEMANTIC[policy_id].window, SEMANTIC[policy_id].overlap, SEMANTIC[policy_id].added_only))
    if len(geometry) != 1:
        return None  # windows of two sizes: indices are not comparable
    ((window, overlap, _),) = geometry
    return Passages(lexical.windows, semantic.windows, window, overlap, semantic.null)


def rules_scans(policy_id: str, texts: list[str]) -> list[Scan]:
    """What the pre-check's rules find in every text under the policy's rulesets (score, evidence)."""
    policy = load_policy(policy_id)
    return [scan_policy(text.encode("utf-8"), policy) for text in texts]


def together(texts: list[str], scans: list[Scan], passages: Passages, slack: int) -> np.ndarray:
    """``n x 3`` booleans per artifact: whether the places of (rules, lexical), (rules, semantic)
    and (lexical, semantic) are within ``slack`` bytes (see the module docstring); ``scans``: the
    rules' findings in each text (:func:`rules_scans`), whose evidence spans are their places."""
    stride = passages.window - passages.overlap
    lex, sem = passages.lexical.best_index, passages.semantic.best_index
    out = np.ones((len(texts), 3), dtype=bool)
    # two windows of one geometry: ``near`` for spans ``index * stride`` + ``window`` long
    out[:, 2] = np.abs(lex - sem) * stride <= passages.window + slack
    for i, (text, scan) in enumerate(zip(texts, scans, strict=True)):
        if next(scanned_views(text.encode("utf-8"), added_only=True))[0] != RAW:
            continue  # the models read the added lines, the rules the raw bytes: not comparable
        spans = [(e.span.start, e.span.end) for e in scan.evidence.values()]
        for column, index in ((0, int(lex[i])), (1, int(sem[i]))):
            window = (index * stride, index * stride + passages.window)
            out[i, column] = index < 0 or any(near(span, window, slack) for span in spans)
    return out


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
    passages: Passages | None = None,
) -> EnsembleChoice:
    """The (lexical, semantic) logit thresholds that minimise the simulated quorum's errors; the
    planted copies' FNR + FPR count ``planted_weight`` times in the objective (0: reported only).
    With ``passages`` and a policy whose quorum has ``colocate_bytes`` (and ``required`` 2), votes
    add up only where they are close, and the semantic reference length is chosen too
    (``EnsembleChoice.semantic_reference``, None: the recipe's)."""
    policy = load_policy(policy_id)
    block = policy.precheck.block_score
    scans = rules_scans(policy_id, train.texts)
    rules = np.array([scan.score for scan in scans])
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
    lex_votes = (lexical_oof[:, None] >= lex_cuts[None, :]).astype(np.int8)  # n x G
    slack = policy.quorum.colocate_bytes
    readings: list[tuple[float | None, np.ndarray]] = [(None, semantic_oof)]
    pairs = None
    if passages is not None and slack is not None and policy.quorum.required == 2:
        pairs = together(train.texts, scans, passages, slack)
        null, where = passages.semantic_null, passages.semantic
        if null is not None:
            references = sorted({*SEMANTIC_REFERENCES, null.reference_windows})
            readings = [
                (r, replace(null, reference_windows=r).artifact_logits(where.best_logit, where.counts))
                for r in references
            ]
    zeros = np.zeros(len(lex_cuts))
    best: EnsembleChoice | None = None
    best_cost = np.inf
    for reference, semantic_scores in readings:
        sem_cuts = _capped(np.quantile(semantic_scores[own], grid), semantic_scores, weights, negative)
        for sem_cut in sem_cuts:
            sem_vote = (semantic_scores >= sem_cut).astype(np.int8)
            if pairs is None:
                quorum = (rules_vote + sem_vote)[:, None] + lex_votes >= policy.quorum.required
            else:  # two harmful votes whose places are close
                rules_sem = (rules_vote & sem_vote & pairs[:, 1]).astype(bool)[:, None]
                rules_lex = (rules_vote & pairs[:, 0]).astype(bool)[:, None] & (lex_votes == 1)
                lex_sem = (sem_vote & pairs[:, 2]).astype(bool)[:, None] & (lex_votes == 1)
                quorum = rules_sem | rules_lex | lex_sem
            harmful = decisive[:, None] | quorum
            fnr = _rate(~harmful, weights, positive)
            fpr = _rate(harmful, weights, negative)
            code_fpr = _rate(harmful, weights, code_negative) if code_negative.any() else zeros
            long_fpr = _rate(harmful, weights, long_negative) if long_negative.any() else zeros
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
                    reference,
                )
    assert best is not None
    return best


def _capped(cuts: np.ndarray, scores: np.ndarray, weights: np.ndarray, negative: np.ndarray) -> np.ndarray:
    """The candidate cuts at which the model alone flags at most ``VOTE_FPR_CAP`` of the negatives."""
    allowed = _rate((scores[:, None] >= cuts[None, :]), weights, negative) <= VOTE_FPR_CAP
    return cuts[allowed] if allowed.any() else cuts[-1:]


def store_reference(path: Path, windows: float) -> None:
    """Rewrite the reference length of an artifact's window null (its ``null_reference_windows``)."""
    arrays = _arrays(path)
    arrays["null_reference_windows"] = np.float32(windows)
    np.savez_compressed(path, **arrays)


def _arrays(path: Path) -> dict[str, Any]:
    """Every array of a model artifact, read into memory (so the file can be rewritten)."""
    with np.load(path) as archive:
        return {key: archive[key] for key in archive.files}


def store_threshold(path: Path, logit: float) -> None:
    """Rewrite an artifact's run-time ``threshold`` (a probability), keeping the old one as ``threshold_alone``."""
    arrays = _arrays(path)
    arrays.setdefault("threshold_alone", arrays["threshold"])
    arrays["threshold"] = np.float32(1.0 / (1.0 + np.exp(-logit)))
    np.savez_compressed(path, **arrays)
