"""Is an injection still found when it sits in the middle of a long artifact? Dev records, planted.

    python benchmarks/planted.py [--policy prompt-injection] [--size 16384 --size 65536]
        [--padding malicious-package] [--setup rules,lexical,semantic]... [FILE.jsonl[.gz]]

The labelled records are short (a prompt-injection record is a few hundred bytes to a few KB);
what a nightly scan gates is often a release diff of tens of KB. This writes, for every size, a
copy of ``FILE`` (default: the policy's dev split) in which each record sits in the middle of
harmless padding cut to that many bytes: the harmless records of the ``--padding`` policy's TRAIN
split (default: malicious-package, i.e. real release diffs; ``prompt-injection`` pads with
harmless prose, much of it hard negatives written about attacks), drawn with a fixed seed. The
label stays the record's own. It then runs ``canary eval --json`` on each copy and prints n, FN,
FP, FNR and FPR per setup: a rise in FNR with size is signal drowned by length, a rise in FPR is
the padding (or length itself) read as harmful. Nothing is trained or tuned here.
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import tempfile
from pathlib import Path

from mail_headers import evaluate

from worker.training.data import default_datasets_dir

SEPARATOR = "\n\n"


def harmless_texts(policy: str) -> list[str]:
    path = default_datasets_dir() / policy / "train.jsonl.gz"
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        return [r["text"] for r in map(json.loads, handle) if r["label"] == "harmless"]


def padding(rng: random.Random, source: list[str], size: int) -> str:
    """Harmless texts joined until ``size`` UTF-8 bytes, cut there (a cut character is dropped)."""
    pieces: list[str] = []
    total = 0
    while total < size:
        piece = rng.choice(source)
        pieces.append(piece)
        total += len(piece.encode("utf-8")) + len(SEPARATOR)
    return SEPARATOR.join(pieces).encode("utf-8")[:size].decode("utf-8", "ignore")


def planted_copy(source_file: Path, out: Path, pad_source: list[str], size: int, seed: int) -> int:
    """Write the planted copy; returns the number of records."""
    rng = random.Random(seed)
    opener = gzip.open if source_file.suffix == ".gz" else open
    count = 0
    with opener(source_file, "rt", encoding="utf-8") as src, out.open("w", encoding="utf-8") as dst:
        for line in src:
            if not line.strip():
                continue
            record = json.loads(line)
            pad = padding(rng, pad_source, max(0, size - len(record["text"].encode("utf-8"))))
            half = len(pad) // 2
            record["text"] = pad[:half] + SEPARATOR + record["text"] + SEPARATOR + pad[half:]
            dst.write(json.dumps(record) + "\n")
            count += 1
    return count


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("file", nargs="?")
    parser.add_argument("--policy", default="prompt-injection")
    parser.add_argument("--size", type=int, action="append", help="bytes; repeatable (default 16384, 65536)")
    parser.add_argument("--padding", default="malicious-package", help="whose train harmless records pad")
    parser.add_argument("--setup", action="append", help="detector setups (default: the shipped gate)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    source_file = Path(args.file or default_datasets_dir() / args.policy / "dev.jsonl.gz")
    pad_source = harmless_texts(args.padding)
    setups = tuple(args.setup or ("rules,lexical,semantic",))
    print(f"# {source_file} under {args.policy}, each record in the middle of {args.padding} train padding")
    print(f"{'setup':24} {'size':>8} {'n':>5} {'FN':>4} {'FP':>4} {'FNR':>7} {'FPR':>7}")
    with tempfile.TemporaryDirectory(prefix="canary-planted-") as scratch:
        for size in args.size or [16384, 65536]:
            path = Path(scratch) / f"planted-{size}.jsonl"
            planted_copy(source_file, path, pad_source, size, args.seed + size)
            for row in evaluate(path, args.policy, setups):
                print(
                    f"{row['setup']!s:24} {size:8d} {row['n']:5d} {row['fn']:4d} {row['fp']:4d}"
                    f" {row['fnr']:7.1%} {row['fpr']:7.1%}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
