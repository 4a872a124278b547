"""``python -m worker.training.corpus {fetch,build}``: the extra prompt-injection training corpus.

``fetch`` asks the registries for the READMEs of the most downloaded packages (held-out and
real-release-sample names dropped first) and diffs the newest release of ``--releases`` of them
per registry against the one before (``releases.py``), into ``~/.cache/canary-corpus``. ``build``
composes the committed corpus, deterministically from that cache (seed 0): generated attacks in
carriers, the same carriers with harmless payloads, hard negatives, NotInject (``--notinject DIR``,
the PIGuard repository's ``datasets/``), README slices, long README documents and slices of the
release diffs and of the prose they add; it writes
``data/prompt-injection.jsonl.gz`` (training records, split ``train``), ``data/carriers.jsonl.gz``
(READMEs kept out of training, for ``benchmarks/planted.py``) and ``data/MANIFEST.json``.
``agents --asb DIR`` writes ``data/agent-actions.jsonl.gz`` from Agent Security Bench's ``data/``
folder (``agents.py``), its carriers filled with the README slices of the built corpus, and adds
its counts to the manifest. Dev is never read.
"""

from __future__ import annotations

import argparse
import gzip
import json
from pathlib import Path
from typing import Any

from worker.training.corpus import agents, build, registry, releases

DATA_DIR = Path(__file__).resolve().parent / "data"
PACKAGE_LISTS = Path("/work/.library/env/packages")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m worker.training.corpus", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    fetch = sub.add_parser("fetch", help="fill the README cache from PyPI and npm")
    fetch.add_argument("--pypi-list", type=Path, default=PACKAGE_LISTS / "pypi.tsv")
    fetch.add_argument("--npm-list", type=Path, default=PACKAGE_LISTS / "npm.tsv")
    fetch.add_argument("--pypi", type=int, default=3000, help="how many PyPI packages")
    fetch.add_argument("--npm", type=int, default=2500, help="how many npm packages")
    fetch.add_argument("--releases", type=int, default=releases.RELEASES, help="release diffs per registry")
    for command in (fetch, sub.add_parser("build", help="write the committed corpus")):
        command.add_argument("--cache", type=Path, default=build.default_cache())
        command.add_argument("--datasets-dir", type=Path, default=None)
    build_args = sub.choices["build"]
    build_args.add_argument("--notinject", type=Path, default=None, help="PIGuard's datasets/ folder")
    build_args.add_argument("--out", type=Path, default=DATA_DIR)
    agent_args = sub.add_parser("agents", help="write the agent-action records from ASB's data/")
    agent_args.add_argument("--asb", type=Path, required=True, help="Agent Security Bench's data/ folder")
    agent_args.add_argument("--out", type=Path, default=DATA_DIR)
    args = parser.parse_args(argv)
    if args.command == "agents":
        write_agents(args.asb, args.out)
        return
    heldout, samples = build.exclusions(args.datasets_dir)
    if args.command == "fetch":
        for ecosystem, listing, count in (
            ("pypi", args.pypi_list, args.pypi),
            ("npm", args.npm_list, args.npm),
        ):
            names = [
                n
                for n in registry.popular(listing, ecosystem, count * 2)
                if not registry.excluded(ecosystem, n, heldout, samples)
            ]
            fetched = registry.fetch_readmes(ecosystem, names[:count], args.cache)
            print(f"{ecosystem}: {fetched} fetched, {count} wanted", flush=True)
            picked = releases.pick(ecosystem, names[:count], args.releases, build.CARRIER_SHARE)
            fetched = releases.fetch_release_diffs(ecosystem, picked, args.cache)
            print(f"{ecosystem}: {fetched} release diffs fetched, {len(picked)} wanted", flush=True)
        return
    train, carriers, manifest = build.build_corpus(args.cache, heldout, samples, args.notinject)
    args.out.mkdir(parents=True, exist_ok=True)
    for name, records in (("prompt-injection.jsonl.gz", train), ("carriers.jsonl.gz", carriers)):
        write_records(args.out / name, records)
    (args.out / "MANIFEST.json").write_text(
        json.dumps(manifest, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    print(json.dumps(manifest["counts"], indent=2))


def write_records(path: Path, records: list[dict[str, Any]]) -> None:
    """JSON lines, gzip without a timestamp: the same records give the same bytes."""
    with gzip.GzipFile(path, "wb", mtime=0) as raw:
        raw.write("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records).encode("utf-8"))


def write_agents(asb: Path, out: Path) -> None:
    """``agents``: the ASB records, filled with the built corpus's README slices, and their counts
    in the manifest."""
    with gzip.open(out / "prompt-injection.jsonl.gz", "rt", encoding="utf-8") as handle:
        fillers = [r["text"] for r in map(json.loads, handle) if r["id"].startswith("extra:readme:")]
    records = agents.agent_records(asb, fillers, seed=build.SEED)
    write_records(out / agents.FILE_NAME, records)
    manifest_path = out / "MANIFEST.json"
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    counts = {"harmful": 0, "harmless": 0}
    for record in records:
        counts[record["label"]] += 1
    manifest["agent_actions"] = {
        "command": "python -m worker.training.corpus agents --asb ASB/data",
        "file": agents.FILE_NAME,
        "counts": counts,
        "source": f"{agents.SOURCE}, {agents.LICENCE}: see worker/training/corpus/agents.py",
    }
    manifest_path.write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(json.dumps(counts))


if __name__ == "__main__":
    main()
