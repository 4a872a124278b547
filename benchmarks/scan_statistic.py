"""Reproduce the choice of the semantic heads' scan statistic: the reference-length sweep on train.

    python benchmarks/scan_statistic.py [--policy ID]... [--releases ~/.cache/canary-releases]

For each policy: the out-of-fold window logits of the lexical and semantic models (the recipes of
``worker.training``, group 5-fold CV on the train split, as ``python -m worker.training`` computes
them), then, for the semantic head read as its best window alone and as a scan statistic with
the reference length at several quantiles of train's window counts, the quorum thresholds chosen
by ``worker.training.ensemble`` and the train objective they reach (weighted FNR + FPR + code
FPR). With ``--releases`` (the diff cache of ``real_releases.py``) it also counts the releases on
which each setting's semantic vote says harmful, with the shipped head's weights (the same for
every setting: only its threshold and null differ). Dev is never read. About 4 CPU-minutes per
policy; nothing is written.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from worker.detectors.local.embedding import EMBEDDING_DIR, StaticEmbedding  # noqa: E402
from worker.detectors.local.scan_statistic import WindowNull  # noqa: E402
from worker.detectors.local.semantic import load_model  # noqa: E402
from worker.detectors.local.windows import models_dir, window_spans, window_texts  # noqa: E402
from worker.training import lexical, semantic  # noqa: E402
from worker.training.data import (  # noqa: E402
    POLICIES,
    default_datasets_dir,
    load_corpus,
    own_mask,
    with_code_negatives,
)
from worker.training.ensemble import choose_ensemble_thresholds  # noqa: E402
from worker.training.mil import out_of_fold, window_null  # noqa: E402

QUANTILES = (0.0, 0.5, 0.75, 0.9, 0.95, 0.99, 1.0)


def release_best_windows(policy: str, cache: Path) -> list[tuple[float, int]]:
    """``(best window logit, window count)`` of every cached release diff under the shipped head."""
    model = load_model(policy)
    out = []
    for path in sorted(cache.glob("*.diff")):
        data = path.read_bytes()
        spans = window_spans(len(data), model.window, model.overlap)
        best = max(
            float(model.logits(window_texts(data, spans[i : i + 256])).max())
            for i in range(0, len(spans), 256)
        )
        out.append((best, len(spans)))
    return out


def sweep(policy: str, cache: Path | None) -> None:
    datasets = default_datasets_dir()
    train = with_code_negatives(load_corpus(datasets, policy, "train"), datasets, policy, "train")
    labels = np.asarray(train.labels)
    own = own_mask(train)
    lex_recipe, sem_recipe = lexical.RECIPES[policy], semantic.RECIPES[policy]
    matrix, lex_owner = lexical.window_matrix(train.texts, lex_recipe)
    lex_oof, _ = out_of_fold(
        lambda: lexical._classifier(lex_recipe), matrix, lex_owner, labels, train.groups, lex_recipe.mil
    )
    embedding = StaticEmbedding.load(models_dir() / EMBEDDING_DIR)
    features, owner = semantic.window_features(train.texts, embedding, sem_recipe)
    sem_best, sem_windows = out_of_fold(
        lambda: semantic.ScaledHead(sem_recipe), features, owner, labels, train.groups, sem_recipe.mil
    )
    counts = np.bincount(owner, minlength=len(labels))
    releases = release_best_windows(policy, cache) if cache else []
    print(f"\n{policy}: {len(labels)} train artifacts, {owner.size} semantic windows")
    print(f"{'semantic vote':36} {'objective':>9} {'FNR':>7} {'FPR':>7} {'code FPR':>8}  releases flagged")
    settings: list[tuple[str, WindowNull | None]] = [("best window alone", None)]
    for q in QUANTILES:
        null = window_null(sem_windows, owner, labels, own, q)
        settings.append((f"scan statistic, q={q} ({null.reference_windows:.0f} windows)", null))
    for name, null in settings:
        scores = sem_best if null is None else null.artifact_logits(sem_best, counts)
        choice = choose_ensemble_thresholds(policy, train, lex_oof, scores)
        flagged = sum(
            (best if null is None else null.artifact_logit(best, n)) >= choice.semantic_logit
            for best, n in releases
        )
        objective = choice.fnr + choice.fpr + choice.code_fpr
        shown = f"{flagged} of {len(releases)}" if releases else "-"
        print(
            f"{name:36} {objective:9.4f} {choice.fnr:7.4f} {choice.fpr:7.4f} {choice.code_fpr:8.4f}  {shown}",
            flush=True,
        )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--policy", action="append", choices=POLICIES)
    parser.add_argument("--releases", type=Path, default=None, help="real_releases.py's diff cache")
    args = parser.parse_args()
    for policy in args.policy or list(POLICIES):
        sweep(policy, args.releases)


if __name__ == "__main__":
    main()
