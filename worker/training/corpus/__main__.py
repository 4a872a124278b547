"""``python -m worker.training.corpus {fetch,build,agents,steering,prompts,errands,governance,packages,behaviours}``: the extra training corpora.

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
its counts to the manifest; ``steering`` writes ``data/steering.jsonl.gz`` the same way, generated
injections that steer what the reader says (``steering.py``); ``prompts`` writes
``data/app-prompts.jsonl.gz``, LLM applications' own prompts in their code (``prompts.py``,
harmless); ``errands`` writes
``data/errands.jsonl.gz``, requests to act on the user's accounts placed in tool output, and their
look-alikes (``errands.py``); ``governance`` fetches the governance files (codes of conduct,
security policies, contributing guides, issue templates, ``AGENTS.md``) of the most popular
releases into the cache and writes ``data/governance.jsonl.gz``, harmless (``governance.py``).
``packages`` writes
``data/package-releases.jsonl.gz``, the malicious-package models' harmless release diffs, from the
same cache (``releases.py``), dropping the packages of that policy's labelled splits;
``behaviours`` then writes ``data/package-behaviours.jsonl.gz``, generated malicious-package
behaviour families and their look-alikes (``malware.py``, ``lookalikes.py``, ``behaviours.py``).
Dev is never read.
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

from worker.training.corpus import (
    agents,
    behaviours,
    build,
    errands,
    governance,
    prompts,
    registry,
    releases,
    steering,
)
from worker.training.data import CORPUS_FILE, default_datasets_dir, read_records

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
    steering_args = sub.add_parser("steering", help="write the generated steering records (after build)")
    steering_args.add_argument("--out", type=Path, default=DATA_DIR)
    prompt_args = sub.add_parser("prompts", help="write the generated app-prompt negatives (after build)")
    prompt_args.add_argument("--out", type=Path, default=DATA_DIR)
    errand_args = sub.add_parser("errands", help="write the generated tool-output errands (after build)")
    errand_args.add_argument("--out", type=Path, default=DATA_DIR)
    errand_args.add_argument(
        "--reports", action="store_true", help="add reports that quote an errand (harmless)"
    )
    governance_args = sub.add_parser(
        "governance", help="fetch the governance files of popular releases and write their records"
    )
    governance_args.add_argument("--cache", type=Path, default=build.default_cache())
    governance_args.add_argument("--datasets-dir", type=Path, default=None)
    governance_args.add_argument("--pypi-list", type=Path, default=PACKAGE_LISTS / "pypi.tsv")
    governance_args.add_argument("--npm-list", type=Path, default=PACKAGE_LISTS / "npm.tsv")
    governance_args.add_argument("--pypi", type=int, default=3500, help="how many PyPI sdists")
    governance_args.add_argument("--npm", type=int, default=1000, help="how many npm tarballs")
    governance_args.add_argument(
        "--covenant", type=Path, default=None, help="contributor_covenant's content/version/ folder"
    )
    governance_args.add_argument("--out", type=Path, default=DATA_DIR)
    package_args = sub.add_parser("packages", help="write the malicious-package release diffs from the cache")
    package_args.add_argument("--cache", type=Path, default=build.default_cache())
    package_args.add_argument("--datasets-dir", type=Path, default=None)
    package_args.add_argument("--out", type=Path, default=DATA_DIR)
    behaviour_args = sub.add_parser(
        "behaviours", help="write the generated malicious-package behaviour records"
    )
    behaviour_args.add_argument("--out", type=Path, default=DATA_DIR)
    args = parser.parse_args(argv)
    if args.command == "behaviours":
        write_behaviours(args.out)
        return
    if args.command == "steering":
        write_steering(args.out)
        return
    if args.command == "prompts":
        write_prompts(args.out)
        return
    if args.command == "errands":
        write_errands(args.out, args.reports)
        return
    if args.command == "agents":
        write_agents(args.asb, args.out)
        return
    if args.command == "governance":
        write_governance(args)
        return
    if args.command == "packages":
        write_packages(args.cache, args.datasets_dir, args.out)
        return
    heldout, samples = build.exclusions(args.datasets_dir)
    if args.command == "fetch":
        for ecosystem, listing, count in (
            ("pypi", args.pypi_list, args.pypi),
            ("npm", args.npm_list, args.npm),
        ):
            names = registry.wanted(listing, ecosystem, count, heldout, samples)
            fetched = registry.fetch_readmes(ecosystem, names, args.cache)
            print(f"{ecosystem}: {fetched} fetched, {count} wanted", flush=True)
            picked = releases.pick(ecosystem, names, args.releases, build.CARRIER_SHARE)
            fetched = releases.fetch_release_diffs(ecosystem, picked, args.cache)
            print(f"{ecosystem}: {fetched} release diffs fetched, {len(picked)} wanted", flush=True)
        return
    train, carriers, manifest = build.build_corpus(args.cache, heldout, samples, args.notinject)
    args.out.mkdir(parents=True, exist_ok=True)
    for name, records in ((CORPUS_FILE.name, train), ("carriers.jsonl.gz", carriers)):
        write_records(args.out / name, records)
    (args.out / "MANIFEST.json").write_text(
        json.dumps(manifest, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    print(json.dumps(manifest["counts"], indent=2))


def write_records(path: Path, records: list[dict[str, Any]]) -> None:
    """JSON lines, gzip without a timestamp: the same records give the same bytes."""
    with gzip.GzipFile(path, "wb", mtime=0) as raw:
        raw.write("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records).encode("utf-8"))


def write_packages(cache: Path, datasets_dir: Path | None, out: Path) -> None:
    """``packages``: the malicious-package release records, and their count in the manifest. The
    labelled splits' packages are dropped here (the fetch already dropped held-out and sample names)."""
    labelled = releases.labelled_split_packages(datasets_dir or default_datasets_dir())
    _write_counted(
        out,
        "package_releases",
        releases.PACKAGES_FILE,
        releases.package_records(random.Random(build.SEED), cache, labelled),
        command="python -m worker.training.corpus fetch && python -m worker.training.corpus packages",
        policy="malicious-package",
        source=f"{releases.PACKAGES_SOURCE}: see worker/training/corpus/releases.py",
        dropped="the held-out and real-release-sample names (at fetch), and every package of the "
        "malicious-package train and dev splits",
    )


def write_governance(args: argparse.Namespace) -> None:
    """``governance``: fetch (what the cache lacks) the governance files of the most popular
    releases, add the Contributor Covenant's translations, and write their records and counts."""
    heldout, samples = build.exclusions(args.datasets_dir)
    for ecosystem, listing, count in (("pypi", args.pypi_list, args.pypi), ("npm", args.npm_list, args.npm)):
        names = registry.wanted(listing, ecosystem, count, heldout, samples)
        fetched = governance.fetch_governance(ecosystem, names, args.cache)
        print(f"{ecosystem}: {fetched} archives read, {count} wanted", flush=True)
    documents = governance.cached_documents(args.cache)
    if args.covenant is not None:
        rng = random.Random(build.SEED)
        documents += [
            ("covenant", "contributor-covenant", governance.COVENANT_LICENCE, member, text)
            for member, text in governance.covenant_documents(args.covenant, rng)
        ]
    _write_counted(
        args.out,
        "governance",
        governance.FILE_NAME,
        governance.governance_records(documents, seed=build.SEED, contested=_blocked_early()),
        command="python -m worker.training.corpus governance --covenant contributor_covenant/content/version",
        source=f"{governance.SOURCE}: see worker/training/corpus/governance.py",
        licence="each package's own (its record's license); the Contributor Covenant CC BY 4.0",
        dropped="the held-out and real-release-sample names, before any request",
    )


def _blocked_early() -> Callable[[str], bool]:
    """Whether prompt-injection's pre-check (the policy loaded once) blocks a text on its own."""
    from policies.loader import load_policy
    from worker.core.precheck import run_precheck

    policy = load_policy("prompt-injection")
    return lambda text: run_precheck(text.encode("utf-8"), policy).verdict == "harmful"


def write_behaviours(out: Path) -> None:
    """``behaviours``: the generated behaviour families and look-alikes (``behaviours.py``), half of
    them beside a stretch of the release diffs that ``packages`` wrote, and their counts in the manifest."""
    fillers = [record["text"] for record in read_records(out / releases.PACKAGES_FILE)]
    _write_counted(
        out,
        "package_behaviours",
        behaviours.FILE_NAME,
        behaviours.behaviour_records(fillers, seed=build.SEED),
        command="python -m worker.training.corpus behaviours (after packages)",
        policy="malicious-package",
        source=f"{behaviours.SOURCE}, {behaviours.LICENCE}",
    )


def _write_counted(
    out: Path,
    key: str,
    file_name: str,
    records: list[dict[str, Any]],
    command: str,
    source: str,
    policy: str | None = None,
    **more: str,
) -> None:
    """Write ``records`` to ``out/file_name`` and describe them, with their counts by label, under
    ``key`` in the manifest; print the counts."""
    write_records(out / file_name, records)
    counts = {"harmful": 0, "harmless": 0}
    for record in records:
        counts[record["label"]] += 1
    entry: dict[str, Any] = {"command": command, "file": file_name}
    if policy is not None:
        entry["policy"] = policy
    entry |= {"counts": counts, "source": source, **more}
    manifest_path = out / "MANIFEST.json"
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    manifest[key] = entry
    manifest_path.write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(json.dumps(counts))


def _readme_fillers(out: Path) -> list[str]:
    """The README slices of the built corpus: what the later records' carriers are filled with."""
    records = read_records(out / CORPUS_FILE.name)
    return [r["text"] for r in records if r["id"].startswith("extra:readme:")]


def write_agents(asb: Path, out: Path) -> None:
    """``agents``: the ASB records, filled with the built corpus's README slices, and their counts
    in the manifest."""
    fillers = _readme_fillers(out)
    _write_counted(
        out,
        "agent_actions",
        agents.FILE_NAME,
        agents.agent_records(asb, fillers, seed=build.SEED),
        command="python -m worker.training.corpus agents --asb ASB/data",
        source=f"{agents.SOURCE}, {agents.LICENCE}: see worker/training/corpus/agents.py",
    )


def write_steering(out: Path) -> None:
    """``steering``: the generated steering records (``steering.py``), filled with the built
    corpus's README slices, and their counts in the manifest."""
    _write_counted(
        out,
        "steering",
        steering.FILE_NAME,
        steering.steering_records(_readme_fillers(out), seed=build.SEED),
        command="python -m worker.training.corpus steering (after build)",
        source=f"{steering.SOURCE}, {steering.LICENCE}",
    )


def write_prompts(out: Path) -> None:
    """``prompts``: LLM applications' own prompts in their code (``prompts.py``), harmless, some in
    the built corpus's README slices, and their counts in the manifest."""
    _write_counted(
        out,
        "app-prompts",
        prompts.FILE_NAME,
        prompts.prompt_records(_readme_fillers(out), seed=build.SEED),
        command="python -m worker.training.corpus prompts (after build)",
        source=f"{prompts.SOURCE}, {prompts.LICENCE}",
    )


def write_errands(out: Path, reports: bool = False) -> None:
    """``errands``: the generated tool-output errands and their look-alikes (``errands.py``), the
    web pages filled with the built corpus's README slices, and their counts in the manifest;
    ``reports`` adds the reports that quote an errand."""
    _write_counted(
        out,
        "errands",
        errands.FILE_NAME,
        errands.errand_records(_readme_fillers(out), seed=build.SEED, reports=reports),
        command="python -m worker.training.corpus errands"
        + (" --reports" if reports else "")
        + " (after build)",
        source=f"{errands.SOURCE}, {errands.LICENCE}",
    )


if __name__ == "__main__":
    main()
