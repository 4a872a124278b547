"""Draw a fresh sample of real releases nobody tuned on, for ``benchmarks/real_releases.py``.

    python benchmarks/draw_releases.py --seed 7 --per-registry 40 > benchmarks/releases/fresh-releases-7.txt

Popular packages of the machine's package lists (``/work/.library/env/packages``) ranked beyond
what the training corpus may read (``python -m worker.training.corpus fetch`` reads READMEs and
release diffs of the first ``2 x --pypi`` / ``2 x --npm`` names), and in none of: the held-out
names, the other lists in ``benchmarks/releases/``, the labelled datasets' packages (either split:
dev is read for its package names only). Each drawn package is pinned at its newest release (the
registry is asked), so the list stays the same sample when it is gated later.
"""

from __future__ import annotations

import argparse
import random
import sys

import harness  # noqa: F401  (puts the repository on sys.path)

CORPUS_READS = {"pypi": 6000, "npm": 5000}  # 2 x the corpus fetch's defaults: never drawn from
DRAW_FROM = {"pypi": 12000, "npm": 10000}  # ... up to this rank


def main() -> None:
    import httpx

    from producers.registry import RegistryError
    from producers.registry.release import parse_spec, resolve_release
    from worker.training.corpus import build, registry, releases
    from worker.training.corpus.__main__ import PACKAGE_LISTS
    from worker.training.data import default_datasets_dir

    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--per-registry", type=int, default=40)
    args = parser.parse_args()
    heldout, samples = build.exclusions(None)
    labelled = releases.labelled_split_packages(default_datasets_dir())
    rng = random.Random(args.seed)
    lines = []
    with httpx.Client(timeout=60.0, follow_redirects=True) as client:
        for ecosystem in ("pypi", "npm"):
            ranked = registry.popular(PACKAGE_LISTS / f"{ecosystem}.tsv", ecosystem, DRAW_FROM[ecosystem])
            pool = [
                n
                for n in ranked[CORPUS_READS[ecosystem] :]
                if not registry.excluded(ecosystem, n, heldout, samples)
                and (ecosystem, registry.normalized(ecosystem, n)) not in labelled
            ]
            rng.shuffle(pool)
            drawn = 0
            for name in pool:
                if drawn == args.per_registry:
                    break
                try:
                    release = resolve_release(client, parse_spec(f"{ecosystem}:{name}"))
                except RegistryError as exc:
                    print(f"skipped: {exc}", file=sys.stderr)
                    continue
                if release.old is None:  # a first release is no release diff
                    continue
                sep = "==" if ecosystem == "pypi" else "@"
                lines.append(f"{ecosystem}:{name}{sep}{release.version}")
                drawn += 1
    print(
        f"# Drawn with `python benchmarks/draw_releases.py --seed {args.seed} --per-registry {args.per_registry}`:\n"
        "# popular packages beyond what the training corpus reads, in no other list, not held out, not in\n"
        "# the labelled data; each at its newest release, diffed against the one before. Presumed benign."
    )
    print("\n".join(lines))


if __name__ == "__main__":
    main()
