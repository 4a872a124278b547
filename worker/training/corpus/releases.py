"""Real release diffs from the PyPI and npm registries: harmless text of the shape a nightly scan reads.

The prompt-injection models read every release a registry scan gates: the diff itself and the prose
it adds inside code (:func:`worker.core.prose.diff_prose`). Their false alarms on untouched releases
come from exactly that text (install and usage prose, imperative comments, UI strings), which the
labelled data holds only as the malicious-package split's few hundred diffs. ``fetch`` diffs the
newest release of popular packages against the one before, with the producers' own code
(:func:`producers.registry.release.release_diff`), into ``<cache>/releases/<ecosystem>/``; the
build cuts line-aligned slices of each diff and of its prose view into harmless records. Held-out
names and the real-release samples' names are dropped before any request, as for READMEs.

The malicious-package models read the same diffs as code (``packages``): their labelled train split
holds 728 registry diffs of a few hundred packages, and their false alarms on untouched releases
are ordinary code of other packages (a compression library, a scope analyser, an HTTP client).
:func:`package_records` keeps one stretch of each release diff, up to the labelled diffs' 64 KB cap,
from the start of a random file, and drops the packages of the labelled splits (train and dev) so
that dev still reads packages no model has seen.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import random
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from worker.core.diff import parse_diff
from worker.core.prose import diff_prose
from worker.training.corpus.registry import normalized
from worker.training.data import PACKAGES_FILE as PACKAGES_PATH
from worker.training.data import read_records

RELEASES = 300  # packages per registry whose newest release is diffed
MAX_DIFF = 16 << 20  # bytes: a larger diff is not kept (it would only lend more slices)
SLICE_BYTES = (2048, 12288)  # log-uniform slice sizes, a few to many of the models' windows
SLICES_PER_VIEW = 2  # slices of the diff and of its prose view, per release


def _file(name: str) -> str:
    return name.replace("/", "__") + ".diff.gz"


def fetch_release_diffs(ecosystem: str, names: Iterable[str], cache: Path, workers: int = 8) -> int:
    """Diff each package's newest release against the one before into ``cache/releases/<ecosystem>/``;
    names already there (diffed, or recorded as failed) are skipped. Returns how many were asked for."""
    from producers.registry.errors import RegistryError
    from producers.registry.polite import polite_client
    from producers.registry.release import parse_spec, release_diff

    target = cache / "releases" / ecosystem
    target.mkdir(parents=True, exist_ok=True)
    todo = [n for n in names if not (target / _file(n)).exists()]

    def one(name: str) -> None:
        try:
            with polite_client() as client:
                diff = release_diff(client, parse_spec(f"{ecosystem}:{name}"))
            label, data = diff.label, diff.data if len(diff.data) <= MAX_DIFF else b""
        except (RegistryError, OSError, ValueError):
            label, data = f"{ecosystem}:{name}:failed", b""
        header = json.dumps({"name": name, "label": label}).encode("utf-8")
        with gzip.GzipFile(target / _file(name), "wb", mtime=0) as raw:
            raw.write(header + b"\n" + data)

    with ThreadPoolExecutor(workers) as pool:
        list(pool.map(one, todo))
    return len(todo)


def cached_release_diffs(ecosystem: str, cache: Path) -> list[tuple[dict[str, str], bytes]]:
    """``(header, diff)`` of every non-empty cached release diff of ``ecosystem``, sorted by name."""
    found = []
    for path in sorted((cache / "releases" / ecosystem).glob("*.diff.gz")):
        header, _, data = gzip.decompress(path.read_bytes()).partition(b"\n")
        if data.strip():
            found.append((json.loads(header), data))
    return found


def line_slice(rng: random.Random, data: bytes, size: int) -> bytes:
    """At most ``size`` bytes of ``data`` from a random line start to a line end."""
    if len(data) <= size:
        return data
    start = data.rfind(b"\n", 0, rng.randrange(len(data) - size)) + 1
    end = data.rfind(b"\n", start, start + size)
    return data[start : end if end > start else start + size]


def release_slices(rng: random.Random, data: bytes) -> list[tuple[str, bytes]]:
    """``(view, slice)``: ``SLICES_PER_VIEW`` slices of the diff and of the prose it adds."""
    low, high = SLICE_BYTES
    out = []
    for view, text in (("diff", data), ("prose", bytes(diff_prose(data)))):
        if not text.strip():
            continue
        for _ in range(SLICES_PER_VIEW if len(text) > high else 1):
            size = int(low * (high / low) ** rng.random())
            out.append((view, line_slice(rng, text, size)))
    return out


def share(ecosystem: str, name: str) -> float:
    """A stable number in [0, 1] per package (a hash of its name): buckets and samples by it."""
    return int(hashlib.sha256(f"{ecosystem}:{name}".encode()).hexdigest()[:8], 16) / 0xFFFFFFFF


def pick(ecosystem: str, names: Iterable[str], count: int, kept_out: float) -> list[str]:
    """``count`` of ``names`` by hash order, none of the ``kept_out`` share (planted.py's carriers)."""
    eligible = [n for n in names if share(ecosystem, n) >= kept_out]
    return sorted(eligible, key=lambda n: hashlib.sha256(f"release:{ecosystem}:{n}".encode()).digest())[
        :count
    ]


PACKAGE_CAP = 64 << 10  # bytes: the labelled malicious-package diffs' cap, so a record reads as theirs do
PACKAGES_FILE = PACKAGES_PATH.name
PACKAGES_SOURCE = "the newest release of popular packages diffed against the one before by producers.registry"


def file_aligned(rng: random.Random, data: bytes, cap: int = PACKAGE_CAP) -> bytes:
    """``data`` if it fits in ``cap``, else at most ``cap`` bytes from the header of a random file of
    the diff to a line end (a diff cut where a file starts reads as a diff)."""
    if len(data) <= cap:
        return data
    parsed = parse_diff(data)
    starts = [f.start for f in parsed.files] if parsed is not None and parsed.files else [0]
    start = rng.choice(starts)
    piece = data[start : start + cap]
    end = piece.rfind(b"\n") + 1 if len(piece) == cap else len(piece)
    return piece[: end or cap]


def labelled_packages(records: Iterable[dict[str, str]]) -> set[tuple[str, str]]:
    """(ecosystem, normalised name) of every registry package in labelled records (their ``group``
    is ``pypi:NAME`` or ``npm:NAME``)."""
    names = set()
    for record in records:
        ecosystem, _, name = record["group"].partition(":")
        if ecosystem in ("pypi", "npm") and name:
            names.add((ecosystem, normalized(ecosystem, name)))
    return names


def labelled_split_packages(datasets: Path) -> set[tuple[str, str]]:
    """:func:`labelled_packages` of the malicious-package train and dev splits under ``datasets``."""
    folder = datasets / "malicious-package"
    return labelled_packages(
        record for split in ("train", "dev") for record in read_records(folder / f"{split}.jsonl.gz")
    )


def package_records(rng: random.Random, cache: Path, dropped: set[tuple[str, str]]) -> list[dict[str, str]]:
    """One harmless malicious-package record per cached release diff whose package is not ``dropped``,
    each its own CV group (``release:`` groups: the ensemble counts their false alarms as a term
    of their own, like prompt-injection's release slices)."""
    records = []
    for ecosystem in ("pypi", "npm"):
        for header, data in cached_release_diffs(ecosystem, cache):
            name = header["name"]
            if (ecosystem, normalized(ecosystem, name)) in dropped:
                continue
            piece = file_aligned(rng, data)
            records.append(
                {
                    "id": f"extra:package-release:{ecosystem}:{name}",
                    "text": piece.decode("utf-8", "replace"),
                    "label": "harmless",
                    "policy": "malicious-package",
                    "source": header["label"],
                    "license": "the package's own licence",
                    "group": f"release:{ecosystem}:{name}",
                    "split": "train",
                    "how": f"{len(piece)} of the release diff's {len(data)} bytes, from a file's header",
                }
            )
    return records
