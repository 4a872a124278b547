"""``python -m worker.training``: rebuild the shipped lexical and semantic artifacts.

Steps: distil the static MiniLM embedding (skipped when already shipped), then
for each policy and detector: group-aware 5-fold CV on the train split, pick
the threshold on the out-of-fold scores, fit on all of train and write
``worker/weights/<policy>/<detector>.npz``.
Prompt-injection trains on its train split plus the committed extra corpus
(``worker/training/corpus/data``: generated attacks and look-alikes in ten
languages and many carriers, NotInject, README slices, long README documents,
slices of real release diffs and LLM applications' own prompts in their code),
and on two planted copies of every train record: one inside code, one inside a
carrier of 128 B-16 KB (README prose, e-mail, issue, table, JSON tool output or
web page), beside as many such carriers with nothing planted. The quorum thresholds weigh the long carriers'
false alarms as a term of their own. Options not in the shipped recipe: more
carriers alone per attack, a share of them holding a generated look-alike
(``--harmless-payloads``), and attacks planted in 16-64 KB carriers with such
carriers alone, only scored so that the thresholds see them (``--long-scored``),
the shared contexts of attacks placed in one document, alone and harmless
(``--clean-contexts``), windows of the planted copies labelled by what they hold
(``--witnesses DETECTOR``, worker.training.witnesses), and thresholds chosen for a quorum that
reads votes passage by passage (``--passages``, worker.training.ensemble), and requests to act on the
user's accounts placed in tool output with their look-alikes (``--errands``,
worker.training.corpus.errands), and the governance files releases ship, harmless
(``--governance``, worker.training.corpus.governance).
Both policies' models read a diff without its removed lines (``added_only``).
Prompt-injection's semantic head is the order-aware convolutional one
(``head="conv"``, ``worker.training.conv``): it needs torch (``pip install
torch==2.13.0``, the CPU build) and 15-60 minutes on 2 cores; its train
split also lends lone sentences of its harmless records (``with_sentences``).
Other policies score their copies only (``--train-on-copies`` trains on them).
Dev is never read here.
"""

from __future__ import annotations

import argparse
import json
import os
import random
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from worker.detectors.local.windows import models_dir
from worker.training.contexts import with_clean_contexts
from worker.training.data import (
    HARMLESS_PAYLOAD_SHARE,
    LONG_SCORED_COUNT,
    PLANTED,
    POLICIES,
    Corpus,
    default_datasets_dir,
    extra_corpus,
    joined,
    load_corpus,
    long_mask,
    own_mask,
    planted_mask,
    with_carriers_alone,
    with_code_negatives,
    with_long_scored,
    with_planted_copies,
    with_sentences,
)
from worker.training.mil import RunOptions, error_rates

if TYPE_CHECKING:  # the trainers themselves are imported lazily, in the loop below
    from worker.training.mil import MilFit

DETECTORS = ("lexical", "semantic")
# Policies whose model thresholds are re-chosen for the local 2-of-3 quorum (worker.training.ensemble)
# after both models are trained; each artifact keeps its stand-alone threshold as ``threshold_alone``.
ENSEMBLE_CALIBRATED = POLICIES
# Policies whose models also train on the planted copies of their records (in code and in prose):
# the records are bare text, what the gate reads is a carrier with the instruction somewhere inside.
TRAINED_COPIES = ("prompt-injection",)
# Policies whose models also train on lone sentences of their harmless records (data.with_sentences).
TRAINED_SENTENCES = ("prompt-injection",)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m worker.training", description=__doc__)
    parser.add_argument("--policy", action="append", choices=POLICIES, help="repeatable; default: all")
    parser.add_argument("--detector", action="append", choices=DETECTORS, help="repeatable; default: all")
    parser.add_argument(
        "--datasets-dir", type=Path, default=None, help="default: $CANARY_DATASETS_DIR or ../shared/datasets"
    )
    parser.add_argument("--out-dir", type=Path, default=None, help="default: the worker/weights package")
    parser.add_argument(
        "--train-on-copies",
        action="store_true",
        help="also train on the planted copies and count their errors in the quorum objective "
        "(an experiment, not the shipped recipe; by default the copies are only scored)",
    )
    parser.add_argument(
        "--prose-negatives",
        action="store_true",
        help="also train on the prose the code negatives' diffs add inside code (comments, docstrings; "
        "an experiment, not the shipped recipe)",
    )
    parser.add_argument(
        "--carriers-per-attack",
        type=float,
        default=1.0,
        help="carriers with no attack per attack planted in a carrier (default: 1)",
    )
    parser.add_argument(
        "--harmless-payloads",
        type=float,
        default=HARMLESS_PAYLOAD_SHARE,
        help="share of those carriers that hold a generated look-alike planted as an attack would be "
        "(default: %(default)s)",
    )
    parser.add_argument(
        "--whole-carriers",
        action="store_true",
        help="cut a carrier alone once, as a planted copy's host is (the shipped recipe cuts it twice)",
    )
    parser.add_argument(
        "--long-scored",
        type=int,
        default=LONG_SCORED_COUNT,
        help="attacks planted in 16-64 KB carriers, and as many such carriers alone, only scored "
        "(never trained on) so that the quorum thresholds see them; 0: none (default: %(default)s)",
    )
    parser.add_argument(
        "--clean-contexts",
        action="store_true",
        help="also train on the context that attacks placed at the start or end of one document share, "
        "alone and harmless (an experiment, not the shipped recipe: see worker.training.contexts)",
    )
    parser.add_argument(
        "--witnesses",
        action="append",
        choices=DETECTORS,
        default=[],
        help="repeatable: this detector also labels the windows of the planted copies by what they hold "
        "(the record's, harmful; the carrier's alone, harmless; worker.training.witnesses), whatever "
        "its recipe says",
    )
    parser.add_argument(
        "--errands",
        action="store_true",
        help="prompt-injection: also train on requests to act on the user's accounts placed in tool "
        "output, and their look-alikes (an experiment, not the shipped recipe: see "
        "worker.training.corpus.errands)",
    )
    parser.add_argument(
        "--governance",
        action="store_true",
        help="prompt-injection: also train on the governance files releases ship (codes of conduct, "
        "security policies, contributing guides, AGENTS.md), harmless (an experiment, not the "
        "shipped recipe: see worker.training.corpus.governance and docs/measurements.md)",
    )
    parser.add_argument(
        "--passages",
        action="store_true",
        help="simulate the quorum passage by passage (the policy's quorum.colocate_bytes) when choosing "
        "the thresholds, and choose the semantic reference length with them (an experiment, not the "
        "shipped recipe: see worker.training.ensemble)",
    )
    parser.add_argument(
        "--seed",
        type=int,
        default=0,
        help="seed of the models' random choices (the corpus's stay fixed; default: 0, the shipped models)",
    )
    parser.add_argument(
        "--redistill", action="store_true", help="distil the static embedding even if shipped"
    )
    return parser.parse_args(argv)


def _keep_oof(
    policy: str, train: Corpus, oof: dict[str, np.ndarray], fits: dict[str, MilFit[Any]] | None = None
) -> None:
    """Keep the out-of-fold scores with the records' ids and groups in the cache folder, so the
    quorum thresholds can be re-chosen (``worker.training.ensemble``) without an hour of CV; with
    ``fits``, also where each model's best window lies and its raw logit (``DETECTOR_best_*``,
    ``DETECTOR_counts``) and the window null (``DETECTOR_null_*``)."""
    from worker.settings import Settings

    folder = Settings.load().cache_root / "training"
    folder.mkdir(parents=True, exist_ok=True)
    arrays: dict[str, np.ndarray] = {
        "ids": np.asarray(train.ids),
        "groups": np.asarray(train.groups),
        "labels": np.asarray(train.labels),
        **oof,
    }
    for detector, fit in (fits or {}).items():
        if fit.windows is not None:
            arrays[f"{detector}_best_logit"] = fit.windows.best_logit
            arrays[f"{detector}_best_index"] = fit.windows.best_index
            arrays[f"{detector}_counts"] = fit.windows.counts
        if fit.null is not None:
            arrays.update(fit.null.arrays(f"{detector}_null"))
    np.savez_compressed(folder / f"{policy}-oof.npz", **arrays)  # type: ignore[arg-type]


def recipe_corpus(datasets: Path, policy: str, args: argparse.Namespace | None = None) -> Corpus:
    """What ``policy``'s models train on: its train split with every addition the recipe (and
    ``args``, the options of this command; None: the shipped recipe) asks for. The reader
    (worker.training.reader) trains on the same."""
    args = args or parse_args([])
    train = load_corpus(datasets, policy, "train")
    if args.clean_contexts:
        train = with_clean_contexts(train, datasets, policy, "train")
    train = with_code_negatives(train, datasets, policy, "train", prose=args.prose_negatives)
    extra = extra_corpus(policy, errands=args.errands, governance=args.governance)
    long = long_mask(extra)
    prose = [t for t, is_long in zip(extra.texts, long, strict=True) if is_long]
    prose_groups = [g for g, is_long in zip(extra.groups, long, strict=True) if is_long]
    train = with_planted_copies(train, datasets, policy, "train", prose=prose)
    if policy in TRAINED_SENTENCES:
        train = with_sentences(train)
    if policy in PLANTED:  # as many carriers alone as there are attacks planted in carriers
        attacks = int((np.asarray(train.labels) == 1)[own_mask(train)].sum())
        count = round(args.carriers_per_attack * attacks)
        train = with_carriers_alone(
            train, prose, prose_groups, count, payloads=args.harmless_payloads, whole=args.whole_carriers
        )
        if args.long_scored:
            train = with_long_scored(train, prose, prose_groups, args.long_scored)
    return joined(train, extra)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    os.environ["HF_HUB_OFFLINE"] = "1"
    random.seed(0)
    np.random.seed(0)
    datasets = args.datasets_dir or default_datasets_dir()
    out_dir = args.out_dir or models_dir()
    detectors = args.detector or list(DETECTORS)
    if "semantic" in detectors:
        from worker.training.distill import distill_embeddings

        distill_embeddings(None if args.out_dir is None else out_dir / "minilm-static", force=args.redistill)
    summary: dict[str, dict[str, object]] = {}
    for policy in args.policy or list(POLICIES):
        train = recipe_corpus(datasets, policy, args)
        copies = args.train_on_copies or policy in TRAINED_COPIES
        labels = np.asarray(train.labels)
        oof: dict[str, np.ndarray] = {}
        fits: dict[str, MilFit[Any]] = {}
        for detector in detectors:
            result: MilFit[Any]
            run = RunOptions(train_on_copies=copies, witnesses=detector in args.witnesses, seed=args.seed)
            if detector == "lexical":
                from worker.training.lexical import train_lexical

                result = train_lexical(policy, train, out_dir, run)
            else:
                from worker.training.semantic import train_semantic

                result = train_semantic(policy, train, out_dir, run)
            own = own_mask(train)
            fnr, fpr = error_rates(result.oof_scores[own], labels[own], result.threshold_logit)
            summary[f"{policy}/{detector}"] = {"cv_fnr": round(fnr, 4), "cv_fpr": round(fpr, 4)}
            print(f"[{detector}:{policy}] group-CV on train: FNR {fnr:.3f}  FPR {fpr:.3f}", flush=True)
            oof[detector] = result.oof_scores
            fits[detector] = result
        _keep_oof(policy, train, oof, fits)
        if policy in ENSEMBLE_CALIBRATED and set(oof) == set(DETECTORS):
            from worker.training.ensemble import (
                choose_ensemble_thresholds,
                passages_of,
                store_reference,
                store_threshold,
            )

            choice = choose_ensemble_thresholds(
                policy,
                train,
                oof["lexical"],
                oof["semantic"],
                planted_weight=float(copies),
                passages=passages_of(policy, fits["lexical"], fits["semantic"]) if args.passages else None,
            )
            store_threshold(out_dir / policy / "lexical.npz", choice.lexical_logit)
            store_threshold(out_dir / policy / "semantic.npz", choice.semantic_logit)
            if choice.semantic_reference is not None:
                store_reference(out_dir / policy / "semantic.npz", choice.semantic_reference)
            summary[f"{policy}/ensemble"] = {
                "cv_fnr": round(choice.fnr, 4),
                "cv_fpr": round(choice.fpr, 4),
                "cv_code_fpr": round(choice.code_fpr, 4),
                "cv_long_fpr": round(choice.long_fpr, 4),
            }
            if planted_mask(train).any():  # the records inside code (scored, or trained on too)
                summary[f"{policy}/ensemble"]["cv_planted_fnr"] = round(choice.planted_fnr, 4)
                summary[f"{policy}/ensemble"]["cv_planted_fpr"] = round(choice.planted_fpr, 4)
            print(f"[ensemble:{policy}] group-CV on train: {choice}", flush=True)
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
