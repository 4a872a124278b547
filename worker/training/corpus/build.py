"""Compose the extra prompt-injection training records (deterministic: seed 0, sorted inputs).

Records have the datasets' fields (``id text label policy source license group split``) plus
``how`` (how it was made). CV groups are coarse on purpose (language x action for attacks,
carrier x language for negatives, 32 hash buckets per registry for READMEs), so group-CV
measures transfer to unseen phrasings, and so thousands of READMEs weigh like a few families.
"""

from __future__ import annotations

import json
import math
import random
from pathlib import Path
from typing import Any

from worker.training.corpus import generate, negatives, phrases, registry, releases
from worker.training.corpus.carriers import CARRIERS
from worker.training.data import LONG_GROUP_PREFIX, RELEASE_GROUP_PREFIX, default_datasets_dir

SEED = 0
ATTACKS = 2400
SHAPED_NEGATIVES = 1800
HARD_NEGATIVES = 1000
README_SLICE = 2048  # bytes of each training README (a slice at line boundaries)
README_RECORDS = 1500  # READMEs trained on as negatives (all of them lend filler to the carriers)
# Long documents of README text (several READMEs joined, log-uniform 4-64 KB): what a planted
# instruction hides in. The best of a long document's windows is what a carrier's false alarm is
# made of, so the thresholds are chosen on these too (worker.training.ensemble, "long" term).
LONG_DOCUMENTS = 600
LONG_SIZES = (4096, 65536)
CARRIER_SHARE = 0.15  # packages (by name hash) whose README is kept out of training, for planted.py
CARRIER_CAP = 32768
BUCKETS = 32
ENGLISH_SHARE = 0.3
HARD_CARRIERS = {
    "advisory": ("bare", "email", "web", "readme"),
    "research": ("bare", "web", "readme"),
    "ai_policy": ("bare", "readme", "ticket"),
    "agents_md": ("bare", "readme", "literal"),
    "rotate_token": ("bare", "ticket", "email"),
    "contributing": ("bare", "readme"),
    "tool_docs": ("bare", "readme", "metadata", "docstring"),
}
GENERATED_LICENCE = "Apache-2.0 (written for this project)"


def default_cache() -> Path:
    """``$CANARY_CORPUS_CACHE``, else ``~/.cache/canary-corpus``."""
    from worker.settings import Settings

    return Settings.load().corpus_cache or Path.home() / ".cache" / "canary-corpus"


def exclusions(datasets_dir: Path | None) -> tuple[set[str], set[tuple[str, str]]]:
    """The held-out name digests and the real-release-sample names."""
    datasets = datasets_dir or default_datasets_dir()
    heldout = set((datasets / "heldout-package-names.sha256").read_text(encoding="utf-8").split())
    releases = registry.release_names(Path(__file__).resolve().parents[3] / "benchmarks" / "releases")
    return heldout, releases


def _language(rng: random.Random) -> str:
    others = [code for code in phrases.LANGUAGES if code != "en"]
    return "en" if rng.random() < ENGLISH_SHARE else rng.choice(others)


def _slice(rng: random.Random, text: str, size: int) -> str:
    return releases.line_slice(rng, text.encode("utf-8"), size).decode("utf-8", "ignore")


def record(
    kind: str, index: int, text: str, label: int, source: str, licence: str, group: str, how: str
) -> dict[str, Any]:
    return {
        "id": f"extra:{kind}:{index}",
        "text": text,
        "label": "harmful" if label else "harmless",
        "policy": "prompt-injection",
        "source": source,
        "license": licence,
        "group": group,
        "split": "train",
        "how": how,
    }


def _readmes(
    cache: Path, heldout: set[str], releases: set[tuple[str, str]]
) -> list[tuple[str, dict[str, str]]]:
    found = []
    for ecosystem in ("pypi", "npm"):
        for record in registry.cached_readmes(ecosystem, cache):
            if not registry.excluded(ecosystem, record["name"], heldout, releases):
                found.append((ecosystem, record))
    return found


def _bucket(ecosystem: str, name: str) -> float:
    return releases.share(ecosystem, name)


def build_corpus(
    cache: Path, heldout: set[str], releases: set[tuple[str, str]], notinject: Path | None
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, Any]]:
    """(training records, carrier-only READMEs, manifest)."""
    rng = random.Random(SEED)
    readmes = _readmes(cache, heldout, releases)
    train_readmes = [(e, r) for e, r in readmes if _bucket(e, r["name"]) >= CARRIER_SHARE]
    held_readmes = [(e, r) for e, r in readmes if _bucket(e, r["name"]) < CARRIER_SHARE]
    fillers = [_slice(rng, r["text"], 2048) for _, r in train_readmes]
    records: list[dict[str, Any]] = []
    carrier_names = sorted(CARRIERS)
    for i in range(ATTACKS):
        lang, kind = _language(rng), rng.choice(phrases.ACTION_KINDS)
        style, carrier = rng.choice(generate.STYLES), rng.choice(carrier_names)
        text = CARRIERS[carrier](rng, generate.attack(rng, lang, kind, style), rng.choice(fillers))
        how = f"generated attack: {lang} {kind} {style} in {carrier}"
        records.append(
            record("attack", i, text, 1, "generated", GENERATED_LICENCE, f"gen-attack:{lang}:{kind}", how)
        )
    for i in range(SHAPED_NEGATIVES):
        lang, carrier = _language(rng), rng.choice(carrier_names)
        text = CARRIERS[carrier](rng, generate.benign_payload(rng, lang), rng.choice(fillers))
        how = f"generated harmless payload: {lang} in {carrier}"
        records.append(
            record("shaped", i, text, 0, "generated", GENERATED_LICENCE, f"gen-shaped:{carrier}:{lang}", how)
        )
    for i in range(HARD_NEGATIVES):
        lang, kind = _language(rng), rng.choice(negatives.KINDS)
        carrier = rng.choice(HARD_CARRIERS[kind])
        text = CARRIERS[carrier](rng, generate.hard_negative(rng, lang, kind), rng.choice(fillers))
        how = f"generated hard negative: {lang} {kind} in {carrier}"
        records.append(
            record("hard", i, text, 0, "generated", GENERATED_LICENCE, f"gen-hard:{kind}:{lang}", how)
        )
    records += _notinject(notinject)
    for i, (ecosystem, readme) in enumerate(
        rng.sample(train_readmes, k=min(README_RECORDS, len(train_readmes)))
    ):
        bucket = int(_bucket(ecosystem, readme["name"]) * BUCKETS)
        how = (
            f"{ecosystem} README of {readme['name']} {readme.get('version', '')}: a {README_SLICE}-byte slice"
        )
        text = _slice(rng, readme["text"], README_SLICE)
        records.append(
            record(
                "readme",
                i,
                text,
                0,
                f"{ecosystem}-readme",
                readme.get("license") or "unknown",
                f"readme:{ecosystem}:{bucket}",
                how,
            )
        )
    records += _long_documents(rng, train_readmes)
    records += _release_records(random.Random(SEED + 1), cache)
    carriers = [
        {
            "id": f"carrier:{e}:{r['name']}",
            "text": r["text"][:CARRIER_CAP],
            "label": "harmless",
            "source": f"{e}-readme",
            "license": r.get("license") or "unknown",
        }
        for e, r in held_readmes
    ]
    return records, carriers, _manifest(records, carriers, notinject is not None)


def _long_documents(rng: random.Random, readmes: list[tuple[str, dict[str, str]]]) -> list[dict[str, Any]]:
    """Harmless documents of whole READMEs joined until a log-uniform size, cut at a line end."""
    out = []
    low, high = (math.log(size) for size in LONG_SIZES)
    for i in range(LONG_DOCUMENTS):
        size = int(math.exp(rng.uniform(low, high)))
        ecosystem, first = rng.choice(readmes)
        names, pieces, total = [first["name"]], [first["text"]], len(first["text"].encode("utf-8"))
        while total < size:
            _, other = rng.choice(readmes)
            names.append(other["name"])
            pieces.append(other["text"])
            total += len(other["text"].encode("utf-8")) + 2
        data = "\n\n".join(pieces).encode("utf-8")[:size]
        end = data.rfind(b"\n")
        text = data[: end if end > 0 else size].decode("utf-8", "ignore")
        bucket = int(_bucket(ecosystem, first["name"]) * BUCKETS)
        how = (
            f"READMEs of {', '.join(names[:4])}{' ...' if len(names) > 4 else ''} joined, cut at {size} bytes"
        )
        out.append(
            record(
                "long",
                i,
                text,
                0,
                f"{ecosystem}-readme",
                first.get("license") or "unknown",
                f"{LONG_GROUP_PREFIX}{ecosystem}:{bucket}",
                how,
            )
        )
    return out


def _release_records(rng: random.Random, cache: Path) -> list[dict[str, Any]]:
    """Line-aligned slices of real release diffs and of the prose they add, as harmless (they are
    drawn with their own generator, so the records before them do not depend on the cache's diffs)."""
    out: list[dict[str, Any]] = []
    for ecosystem in ("pypi", "npm"):
        for header, data in releases.cached_release_diffs(ecosystem, cache):
            group = f"{RELEASE_GROUP_PREFIX}{ecosystem}:{int(_bucket(ecosystem, header['name']) * BUCKETS)}"
            for view, piece in releases.release_slices(rng, data):
                how = f"{header['label']}: a {len(piece)}-byte slice of the {view}"
                out.append(
                    record(
                        "release",
                        len(out),
                        piece.decode("utf-8", "ignore"),
                        0,
                        f"{ecosystem}-release",
                        "the package's own",
                        group,
                        how,
                    )
                )
    return out


def _notinject(folder: Path | None) -> list[dict[str, Any]]:
    """NotInject (PIGuard, MIT): benign prompts full of injection trigger words, as harmless."""
    if folder is None:
        return []
    out = []
    for name in ("NotInject_one.json", "NotInject_two.json", "NotInject_three.json"):
        for i, item in enumerate(json.loads((folder / name).read_text(encoding="utf-8"))):
            group = f"notinject:{item.get('category', 'other')}"
            out.append(
                record(
                    f"notinject-{name[10:-5]}",
                    i,
                    item["prompt"],
                    0,
                    "NotInject (leolee99/PIGuard)",
                    "MIT",
                    group,
                    f"{name}, as is",
                )
            )
    return out


def _manifest(
    records: list[dict[str, Any]], carriers: list[dict[str, Any]], notinject: bool
) -> dict[str, Any]:
    counts: dict[str, dict[str, int]] = {}
    for record in records:
        kind = record["id"].split(":")[1]
        counts.setdefault(kind, {"harmful": 0, "harmless": 0})[record["label"]] += 1
    return {
        "command": "python -m worker.training.corpus fetch && python -m worker.training.corpus build"
        + (" --notinject PIGuard/datasets" if notinject else ""),
        "seed": SEED,
        "dev": "never read",
        "counts": counts,
        "carriers_kept_out_of_training": len(carriers),
        "sources": {
            "generated": "attacks, same-shape harmless payloads and hard negatives composed from phrase tables written for this project (worker/training/corpus/phrases.py, negatives.py) in ten languages, placed in the carriers of worker/training/corpus/carriers.py with README filler",
            "pypi-readme": "info.description from the PyPI JSON API of the most downloaded packages; each package's licence as it declares it",
            "npm-readme": "the README in the newest release tarball of the most downloaded npm packages; each package's licence as it declares it",
            "pypi-release / npm-release": "the newest release of popular packages diffed against the one before by producers.registry (worker/training/corpus/releases.py); slices of the diff and of the prose it adds inside code, under each package's own licence",
            "NotInject": "leolee99/PIGuard datasets/NotInject_*.json (MIT), benign prompts with trigger words, as harmless",
            "dropped": "every package whose sha256('pypi:'/'npm:' + normalised name) is in the datasets' heldout-package-names.sha256, and every package named in benchmarks/releases/*.txt",
        },
    }
