"""How often is an LLM application's own prompt, written in its code, held back? (prompt-injection)

    python benchmarks/app_prompts.py [--per-shape N] [--seed N] [--setup SETUP]...

An application that calls a model writes the model's instructions into its code ("You are a
support assistant. Answer in one short sentence." as a system message, a ``system=`` argument, a
prompts YAML file, a chat template's default system turn, a curl example's request body). The
orders are the application's own model's, not the reader's: harmless. This writes such prompts
with the generator of ``worker/training/corpus/prompts.py`` (ten code shapes; prompts in six
languages; bare, in a README's code block among registry READMEs no model trained on, or as a file
a release diff adds), with ``--seed`` 1 by default (the shipped models train on seed 0: an optimistic reading), runs
``canary eval --json`` and prints how many are held back (quarantined or sent to review), in all
and by shape and carrier. Nothing is trained or tuned here.
"""

from __future__ import annotations

import argparse
import random
from collections import Counter

from harness import SHIPPED_SETUPS, evaluate_records, read_records
from planted import CARRIERS_FILE

from worker.training.corpus import prompts


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--per-shape", type=int, default=30, help="prompts per code shape (default 30)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--setup", action="append", help="detector setups (default: the gate and each alone)")
    args = parser.parse_args()
    setups = tuple(args.setup or SHIPPED_SETUPS)
    readmes = [r["text"] for r in read_records(CARRIERS_FILE)]
    records = prompts.prompt_records(readmes, seed=args.seed, per_shape=args.per_shape)
    rng = random.Random(args.seed)
    rng.shuffle(records)
    pieces = [{**r, "source": r["how"]} for r in records]
    print(
        f"# {len(pieces)} application prompts in code ({args.per_shape} per shape, seed {args.seed}), all harmless"
    )
    print(f"{'setup':24s} {'n':>5s} {'held':>5s} {'rate':>7s} {'review':>6s}")
    for setup, summary in zip(setups, evaluate_records(pieces, "prompt-injection", setups), strict=True):
        print(
            f"{setup:24s} {summary['n']:5d} {summary['fp']:5d} {100 * summary['fpr']:6.1f}%"
            f" {summary['review_harmless']:6d}",
            flush=True,
        )
        if setup == setups[0]:
            print_by_part(summary["by_source"])


def print_by_part(by_source: dict[str, dict[str, int]]) -> None:
    """Held back by code shape, then by carrier (``how`` is "SHAPE prompt in CARRIER")."""
    totals: Counter[str] = Counter()
    held: Counter[str] = Counter()
    for how, counts in by_source.items():
        shape, carrier = how.split(" prompt in ")
        for key in (shape, f"in {carrier}"):
            totals[key] += int(counts["n"])
            held[key] += int(counts["fp"])
    for key in [*prompts.SHAPES, "in bare", "in readme", "in diff"]:
        print(f"{'':24s} {key:>14s} {totals[key]:4d} {held[key]:4d} {held[key] / max(1, totals[key]):6.1%}")


if __name__ == "__main__":
    main()
