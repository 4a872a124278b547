"""Measure the shipped lexical and semantic detectors: train-CV and dev error rates, overlap, speed.

Usage: ``python benchmarks/measure_models.py [--datasets-dir DIR] [--policy ID]``.
Train-CV numbers are the out-of-fold ones stored in each artifact at training
time; dev numbers come from running the real detectors on every dev record
(in memory only). Speed is milliseconds per ~24 KB artifact on one core, over
dev malicious-package diffs of 20-28 KB.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from policies.loader import load_policy  # noqa: E402
from worker.core.detector import Artifact  # noqa: E402
from worker.detectors.local.lexical import LexicalDetector  # noqa: E402
from worker.detectors.local.semantic import SemanticDetector  # noqa: E402
from worker.detectors.local.windows import models_dir  # noqa: E402
from worker.training.data import POLICIES, default_datasets_dir, load_corpus  # noqa: E402

DETECTORS = {"lexical": LexicalDetector, "semantic": SemanticDetector}


def stored_cv(policy: str, detector: str) -> tuple[float, float, float]:
    with np.load(models_dir() / policy / f"{detector}.npz") as archive:
        return float(archive["cv_fnr"]), float(archive["cv_fpr"]), float(archive["cv_accuracy"])


def harmful_flags(detector: object, texts: list[str], policy_id: str) -> np.ndarray:
    policy = load_policy(policy_id)
    flags = []
    for text in texts:
        data = text.encode("utf-8")
        answer = detector.answer(Artifact(sha256=hashlib.sha256(data).hexdigest(), data=data), policy)  # type: ignore[attr-defined]
        assert answer.coverage.complete
        flags.append('"harmful"' in answer.output)
    return np.asarray(flags)


def ms_per_artifact(detector: object, texts: list[str], policy_id: str, repeat: int = 3) -> float:
    policy = load_policy(policy_id)
    artifacts = [Artifact(sha256=str(i), data=t.encode("utf-8")) for i, t in enumerate(texts)]
    detector.answer(artifacts[0], policy)  # type: ignore[attr-defined]  # warm the cache
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        for item in artifacts:
            detector.answer(item, policy)  # type: ignore[attr-defined]
        best = min(best, (time.perf_counter() - start) * 1000 / len(artifacts))
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--datasets-dir", type=Path, default=default_datasets_dir())
    parser.add_argument("--policy", action="append", choices=POLICIES)
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    speed_corpus = load_corpus(args.datasets_dir, "malicious-package", "dev")
    sized = [t for t in speed_corpus.texts if 20_000 <= len(t.encode("utf-8")) <= 28_000][:40]
    print(
        f"{'policy':18} {'detector':9} {'cv FNR':>7} {'cv FPR':>7} {'cv acc':>7} "
        f"{'dev FNR':>8} {'dev FPR':>8} {'dev acc':>8} {'ms/24KB':>8}"
    )
    for policy in args.policy or list(POLICIES):
        dev = load_corpus(args.datasets_dir, policy, "dev")
        labels = np.asarray(dev.labels) == 1
        wrong: dict[str, np.ndarray] = {}
        for name, cls in DETECTORS.items():
            detector = cls(name=name)
            flags = harmful_flags(detector, dev.texts, policy)
            wrong[name] = flags != labels
            fnr, fpr = float(np.mean(~flags[labels])), float(np.mean(flags[~labels]))
            cv_fnr, cv_fpr, cv_acc = stored_cv(policy, name)
            speed = ms_per_artifact(detector, sized, policy)
            print(
                f"{policy:18} {name:9} {cv_fnr:7.3f} {cv_fpr:7.3f} {cv_acc:7.3f} "
                f"{fnr:8.3f} {fpr:8.3f} {1 - wrong[name].mean():8.3f} {speed:8.1f}"
            )
        both = wrong["lexical"] & wrong["semantic"]
        print(
            f"{policy:18} both wrong on dev: {int(both.sum())} of {len(labels)} "
            f"(harmful missed by both: {int((both & labels).sum())}, "
            f"harmless flagged by both: {int((both & ~labels).sum())})"
        )


if __name__ == "__main__":
    main()
