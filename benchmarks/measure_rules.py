"""Measure the pre-check and the rules detector on the labelled datasets.

    python benchmarks/measure_rules.py [--split train dev] [--policy ...] [--rules] [--misses N]

Prints, per policy and split: the pre-check's FNR/FPR (blocks at the policy's
``block_score``) and the rules detector's FNR/FPR (votes at its lower default
threshold). ``--rules`` adds per-rule hit counts on harmful and harmless
records (what tuning looks at: on TRAIN only); ``--misses N`` lists the ids of
up to N false positives and false negatives. Artifact text is never printed.
"""

from __future__ import annotations

import time
from collections import Counter

from harness import arguments, read_records, split_path

from policies.loader import load_policy
from worker.core.precheck import scan_policy
from worker.detectors.local.rules import DEFAULT_RATIO


def rate(part: int, whole: int) -> str:
    return f"{part:4d}/{whole:<4d} = {100.0 * part / max(whole, 1):5.1f}%"


def measure(policy_id: str, split: str, show_rules: bool, misses: int) -> None:
    policy = load_policy(policy_id)
    block, vote = policy.precheck.block_score, DEFAULT_RATIO * policy.precheck.block_score
    totals: Counter[str] = Counter()
    wrong: dict[str, list[str]] = {"pre FP": [], "pre FN": [], "det FP": [], "det FN": []}
    hits: dict[str, Counter[str]] = {"harmful": Counter(), "harmless": Counter()}
    started, size = time.perf_counter(), 0
    for record in read_records(split_path(policy_id, split)):
        data = record["text"].encode("utf-8")
        size += len(data)
        scan = scan_policy(data, policy)
        label = record["label"]
        totals[label] += 1
        hits[label].update(list(scan.evidence))
        for stage, threshold in (("pre", block), ("det", vote)):
            flagged = scan.score >= threshold
            if flagged and label == "harmless":
                totals[stage + " FP"] += 1
                wrong[stage + " FP"].append(record["id"])
            elif not flagged and label == "harmful":
                totals[stage + " FN"] += 1
                wrong[stage + " FN"].append(record["id"])
    elapsed = time.perf_counter() - started
    print(f"== {policy_id} / {split}: {totals['harmful']} harmful, {totals['harmless']} harmless")
    for stage, name in (("pre", f"pre-check (>= {block})"), ("det", f"rules detector (>= {vote})")):
        fnr = rate(totals[stage + " FN"], totals["harmful"])
        fpr = rate(totals[stage + " FP"], totals["harmless"])
        print(f"   {name:26s} FNR {fnr}   FPR {fpr}")
    print(f"   throughput: {size / elapsed / 1e6:.1f} MB/s over {size / 1e6:.1f} MB")
    if show_rules:
        for rule in sorted(set(hits["harmful"]) | set(hits["harmless"])):
            print(f"   {hits['harmful'][rule]:5d} harmful {hits['harmless'][rule]:4d} harmless  {rule}")
    for kind, ids in wrong.items():
        if misses and ids:
            print(f"   {kind}: {' '.join(ids[:misses])}")


def main() -> None:
    parser = arguments(__doc__)
    parser.add_argument("--split", nargs="+", default=["train", "dev"], choices=["train", "dev"])
    parser.add_argument("--policy", nargs="+", default=["prompt-injection", "malicious-package"])
    parser.add_argument("--rules", action="store_true", help="per-rule hit counts")
    parser.add_argument("--misses", type=int, default=0, help="list up to N misclassified ids")
    args = parser.parse_args()
    for policy in args.policy:
        for split in args.split:
            measure(policy, split, args.rules, args.misses)


if __name__ == "__main__":
    main()
