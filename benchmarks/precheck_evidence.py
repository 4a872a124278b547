"""The pre-check's evidence on every labelled record and cached real diff, to compare two checkouts.

    python benchmarks/precheck_evidence.py --out FILE [--cache ~/.cache/canary-releases] [--corpus] [--limit N]
    python benchmarks/precheck_evidence.py --compare BEFORE AFTER

A speed or memory change to the pre-check must not change what it finds. ``--out`` runs
``run_precheck`` of the checkout this script sits in under both shipped policies on every record
of the train and dev splits of both datasets (gzip JSON lines, read as data: the malicious-package
records are malware source as text, never run) and on every ``*.diff`` in ``--cache`` (the real
release diffs ``real_releases.py`` keeps), and writes one JSON line per (record, policy): verdict,
score, evidence (rule, span, layer, weight) and signals, keyed by dataset and record id or diff
name; with ``--corpus``, also on every record of the committed training corpus
(``worker/training/corpus/data/*.jsonl.gz``: its 576 stretches of real release diffs are there on
a machine with no release cache). It writes no artifact text. ``--compare`` reads two such files (e.g. one from a worktree of
main, one from the change) and prints how many results were compared and each that differs;
exit 1 when any differs or is missing.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import harness

POLICIES = ("prompt-injection", "malicious-package")
SPLITS = ("train", "dev")
DEFAULT_CACHE = Path.home() / ".cache" / "canary-releases"
CORPUS = harness.ROOT / "worker" / "training" / "corpus" / "data"


def inputs(cache: Path, corpus: bool = False) -> Iterator[tuple[str, bytes]]:
    """``(key, bytes)`` of every labelled record, then of every cached real diff, then (``corpus``)
    of every record of the committed training corpus."""
    for dataset in POLICIES:
        for split in SPLITS:
            for record in harness.read_records(harness.split_path(dataset, split)):
                yield f"{dataset}/{split}#{record['id']}", record["text"].encode("utf-8")
    for path in sorted(cache.glob("*.diff")) if cache.is_dir() else []:
        yield f"releases/{path.name}", path.read_bytes()
    for path in sorted(CORPUS.glob("*.jsonl.gz")) if corpus else []:
        for record in harness.read_records(path):
            yield f"corpus/{path.name}#{record['id']}", record["text"].encode("utf-8")


def write(out: Path, cache: Path, limit: int, corpus: bool = False) -> None:
    from policies.loader import load_policy
    from worker.core.precheck import run_precheck

    policies = {name: load_policy(name) for name in POLICIES}
    count = size = 0
    started = time.process_time()
    with out.open("w", encoding="utf-8") as sink:
        for n, (key, data) in enumerate(inputs(cache, corpus)):
            if limit and n >= limit:
                break
            for name, policy in policies.items():
                result = run_precheck(data, policy)
                evidence = [[e.rule_id, e.span.start, e.span.end, e.layer, e.weight] for e in result.evidence]
                row = {"key": key, "policy": name, "verdict": result.verdict, "score": result.score}
                sink.write(json.dumps({**row, "evidence": evidence, "signals": list(result.signals)}) + "\n")
                count += 1
            size += len(data)
    seconds = time.process_time() - started
    print(
        f"{count} results ({size / 1e6:.1f} MB under {len(POLICIES)} policies) in {seconds:.1f} CPU-s -> {out}"
    )


def compare(before: Path, after: Path) -> int:
    def rows(path: Path) -> dict[tuple[str, str], dict[str, object]]:
        with path.open(encoding="utf-8") as lines:
            return {(r["key"], r["policy"]): r for r in map(json.loads, lines)}

    old, new = rows(before), rows(after)
    differ = [key for key in old.keys() & new.keys() if old[key] != new[key]]
    missing = sorted(old.keys() ^ new.keys())
    for key in sorted(differ):
        print(f"DIFFERS {key[0]} ({key[1]}): {old[key]} -> {new[key]}")
    for key in missing:
        print(f"MISSING {key[0]} ({key[1]}) in {'the second' if key in old else 'the first'} file")
    evidence = sum(len(r["evidence"]) for r in old.values())  # type: ignore[arg-type]
    print(
        f"compared {len(old.keys() & new.keys())} pre-check results ({evidence} pieces of evidence): "
        f"{len(differ)} differ, {len(missing)} missing"
    )
    return 1 if differ or missing else 0


def main() -> None:
    parser = harness.arguments(__doc__)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    parser.add_argument("--corpus", action="store_true", help="also the committed training corpus")
    parser.add_argument("--limit", type=int, default=0, help="the first N inputs only")
    parser.add_argument("--compare", nargs=2, type=Path, metavar=("BEFORE", "AFTER"))
    args = parser.parse_args()
    if args.compare:
        sys.exit(compare(*args.compare))
    if args.out is None:
        parser.error("--out or --compare")
    print(harness.machine_line())
    write(args.out, args.cache, args.limit, args.corpus)


if __name__ == "__main__":
    main()
