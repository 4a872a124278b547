"""Real README text from the PyPI and npm registries: the benign corpus, fetched once into a cache.

``python -m worker.training.corpus fetch`` asks the PyPI JSON API (``info.description``) and
the npm registry (the README in the newest release's tarball) for the most downloaded packages listed in a
package list (``name<TAB>version<TAB>rank-or-downloads``), and keeps one JSON file per package
under the cache (``~/.cache/canary-corpus``). Packages the acceptance set or the real-release
samples use are never asked for: every name hashed in the datasets' held-out list and every
name in ``benchmarks/releases/*.txt`` is dropped before any request.
"""

from __future__ import annotations

import hashlib
import io
import json
import re
import tarfile
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx

PYPI_JSON = "https://pypi.org/pypi/{name}/json"
NPM_LATEST = "https://registry.npmjs.org/{name}/latest"
MAX_TARBALL = 8 << 20  # bytes: a larger tarball is skipped
_RUN = re.compile(r"[-_.]+")


def normalized(ecosystem: str, name: str) -> str:
    """The held-out list's spelling: PyPI lower-cased with ``-_.`` runs folded to ``-``; npm lower-cased."""
    lowered = name.strip().lower()
    return _RUN.sub("-", lowered) if ecosystem == "pypi" else lowered


def name_digest(ecosystem: str, name: str) -> str:
    """``sha256("<ecosystem>:<normalised name>")`` as the held-out list writes it."""
    return hashlib.sha256(f"{ecosystem}:{normalized(ecosystem, name)}".encode()).hexdigest()


def release_names(releases_dir: Path) -> set[tuple[str, str]]:
    """(ecosystem, normalised name) of every release in the real-release samples."""
    names: set[tuple[str, str]] = set()
    for path in sorted(releases_dir.glob("*.txt")):
        for line in path.read_text(encoding="utf-8").splitlines():
            line = line.strip()
            if not line or line.startswith("#") or ":" not in line:
                continue
            ecosystem, spec = line.split(":", 1)
            name = (
                spec.split("==")[0]
                if ecosystem == "pypi"
                else spec.rsplit("@", 1)[0]
                if spec.rfind("@") > 0
                else spec
            )
            names.add((ecosystem, normalized(ecosystem, name)))
    return names


def excluded(ecosystem: str, name: str, heldout: set[str], releases: set[tuple[str, str]]) -> bool:
    """True for a package that must never reach the corpus."""
    return name_digest(ecosystem, name) in heldout or (ecosystem, normalized(ecosystem, name)) in releases


def wanted(
    list_path: Path, ecosystem: str, count: int, heldout: set[str], releases: set[tuple[str, str]]
) -> list[str]:
    """The ``count`` most popular names of a package list that may reach the corpus."""
    names = [
        n for n in popular(list_path, ecosystem, count * 2) if not excluded(ecosystem, n, heldout, releases)
    ]
    return names[:count]


def popular(list_path: Path, ecosystem: str, count: int) -> list[str]:
    """The ``count`` most popular names of a package list (PyPI: by rank; npm: by downloads)."""
    rows: list[tuple[float, str]] = []
    with list_path.open(encoding="utf-8") as handle:
        next(handle)
        for line in handle:
            parts = line.rstrip("\n").split("\t")
            if len(parts) < 3:
                continue
            if ecosystem == "pypi":
                if parts[3:4] and parts[3].isdigit():
                    rows.append((float(parts[3]), parts[0]))
            elif parts[2].isdigit():
                rows.append((-float(parts[2]), parts[0]))
    rows.sort()
    return [name for _, name in rows[:count]]


def _pypi(client: httpx.Client, name: str) -> dict[str, str] | None:
    response = client.get(PYPI_JSON.format(name=name))
    if response.status_code != 200:
        return None
    info = response.json()["info"]
    return {
        "name": name,
        "version": info.get("version") or "",
        "license": pypi_licence(info),
        "text": info.get("description") or "",
    }


def pypi_licence(info: dict[str, Any]) -> str:
    """The licence a PyPI release's ``info`` declares: its expression, its licence text's start,
    else its trove classifier (``unknown`` when none)."""
    expression: str = info.get("license_expression") or (info.get("license") or "")[:80]
    return expression or _classifier_licence(info)


def _classifier_licence(info: dict[str, Any]) -> str:
    for classifier in info.get("classifiers") or []:
        if isinstance(classifier, str) and classifier.startswith("License ::"):
            return classifier.rsplit("::", 1)[-1].strip()
    return "unknown"


def download(client: httpx.Client, url: str, limit: int = MAX_TARBALL) -> bytes | None:
    """The body at ``url``, or None when it does not answer 200 or grows past ``limit`` bytes."""
    body = bytearray()
    with client.stream("GET", url) as response:
        if response.status_code != 200:
            return None
        for chunk in response.iter_bytes():
            body += chunk
            if len(body) > limit:
                return None
    return bytes(body)


def npm_release(
    client: httpx.Client, name: str, limit: int = MAX_TARBALL
) -> tuple[dict[str, Any], bytes] | None:
    """The manifest of ``name``'s newest release and its tarball (a mirror's relative address
    followed), or None."""
    response = client.get(NPM_LATEST.format(name=name.replace("/", "%2F")))
    if response.status_code != 200:
        return None
    manifest = response.json()
    tarball = (manifest.get("dist") or {}).get("tarball")
    data = download(client, str(response.url.join(tarball)), limit) if tarball else None
    return None if data is None else (manifest, data)


def npm_licence(manifest: dict[str, Any]) -> str:
    """The licence a release's manifest declares (``unknown`` when none)."""
    licence = manifest.get("license") or "unknown"
    if isinstance(licence, dict):
        licence = licence.get("type", "unknown")
    return str(licence)


def _npm(client: httpx.Client, name: str) -> dict[str, str] | None:
    """The README inside the newest release's tarball (this registry serves packuments without one)."""
    found = npm_release(client, name)
    if found is None:
        return None
    manifest, tarball = found
    return {
        "name": name,
        "version": manifest.get("version", ""),
        "license": npm_licence(manifest),
        "text": _readme(tarball),
    }


def _readme(tarball: bytes) -> str:
    """The top-level README of an npm tarball, read in memory (nothing is extracted)."""
    try:
        with tarfile.open(fileobj=io.BytesIO(tarball), mode="r:gz") as archive:
            for member in archive:
                parts = member.name.split("/")
                if member.isfile() and len(parts) == 2 and parts[1].lower().startswith("readme"):
                    handle = archive.extractfile(member)
                    return "" if handle is None else handle.read(1 << 20).decode("utf-8", "replace")
    except (tarfile.TarError, OSError, EOFError):
        return ""
    return ""


def fetch_readmes(ecosystem: str, names: Iterable[str], cache: Path, workers: int = 8) -> int:
    """Fetch each name's README into ``cache/<ecosystem>/``; already cached names are skipped."""
    getter = _pypi if ecosystem == "pypi" else _npm
    return cache_each(cache / ecosystem, names, getter, {"text": ""}, workers=workers)


def cache_each(
    target: Path,
    names: Iterable[str],
    getter: Callable[[httpx.Client, str], dict[str, Any] | None],
    empty: dict[str, Any],
    timeout: float = 30,
    workers: int = 8,
) -> int:
    """Ask ``getter`` for each name not yet cached in ``target`` (one JSON file a name; ``empty``
    with the name where it found nothing or failed), ``workers`` at a time. Returns how many
    were asked for."""
    target.mkdir(parents=True, exist_ok=True)
    todo = [n for n in names if not (target / _file(n)).exists()]

    def one(client: httpx.Client, name: str) -> None:
        try:
            record = getter(client, name)
        except (httpx.HTTPError, ValueError, KeyError):
            record = None
        (target / _file(name)).write_text(json.dumps(record or {"name": name, **empty}), encoding="utf-8")

    headers = {"User-Agent": "canary-gate-corpus/1 (training data builder)"}
    with (
        httpx.Client(timeout=timeout, headers=headers, follow_redirects=True) as client,
        ThreadPoolExecutor(workers) as pool,
    ):
        list(pool.map(lambda n: one(client, n), todo))
    return len(todo)


def _file(name: str) -> str:
    return name.replace("/", "__") + ".json"


def cached_readmes(ecosystem: str, cache: Path) -> list[dict[str, str]]:
    """Every non-empty cached README of ``ecosystem``, sorted by name."""
    records = []
    for path in sorted((cache / ecosystem).glob("*.json")):
        record = json.loads(path.read_text(encoding="utf-8"))
        if record.get("text", "").strip():
            records.append(record)
    return records
