"""The two registries over HTTP: where they are (the ordinary clients' own configuration), what
releases a package has, and downloads checked against the digests the registry publishes."""

from __future__ import annotations

import base64
import hashlib
import os
import re
import shutil
import subprocess
from dataclasses import dataclass, replace
from functools import cache
from typing import TYPE_CHECKING
from urllib.parse import quote, urljoin

import httpx

if TYPE_CHECKING:
    from worker.settings import Settings

from producers.registry.errors import RegistryError, RegistryUnavailableError

SIMPLE_JSON = "application/vnd.pypi.simple.v1+json"
NPM_ABBREVIATED = "application/vnd.npm.install-v1+json"
SDIST_SUFFIXES = (".tar.gz", ".tgz", ".tar.bz2", ".tar.xz", ".zip")


@dataclass(frozen=True)
class ReleaseFile:
    version: str
    filename: str
    url: str
    digest: str  # "sha256=<hex>", "sha512=<base64>" or "sha1=<hex>"


def _settings() -> Settings:
    """``CANARY_PYPI_INDEX_URL`` and ``CANARY_NPM_REGISTRY`` come through the settings, as every
    ``CANARY_*`` variable; pip's and npm's own variables are read as those clients read them."""
    from worker.settings import Settings

    return Settings.load()


def pypi_index_url() -> str:
    url = _settings().pypi_index_url or os.environ.get("PIP_INDEX_URL")
    if not url:
        try:
            from pip._internal.models.index import PyPI

            url = PyPI.simple_url
        except ImportError as exc:
            raise RegistryError("set CANARY_PYPI_INDEX_URL to a PEP 691 simple index") from exc
    return url.rstrip("/") + "/"


def npm_registry_url() -> str:
    url = _settings().npm_registry or os.environ.get("NPM_CONFIG_REGISTRY") or _npm_config()
    if not url:
        raise RegistryError("set CANARY_NPM_REGISTRY to an npm registry URL")
    return url.rstrip("/") + "/"


@cache
def _npm_config() -> str:
    if not shutil.which("npm"):
        return ""
    done = subprocess.run(
        ["npm", "config", "get", "registry"], capture_output=True, text=True, timeout=30, check=False
    )
    return done.stdout.strip() if done.returncode == 0 else ""


def _get_json(client: httpx.Client, url: str, accept: str) -> dict[str, object]:
    try:
        response = client.get(url, headers={"Accept": accept})
    except httpx.HTTPError as exc:
        raise RegistryUnavailableError(f"{url}: {type(exc).__name__}") from exc
    if response.status_code == 404:
        raise RegistryError(f"{url}: not found")
    _check_status(response, url)
    try:
        body = response.json()
    except ValueError as exc:
        raise RegistryError(f"{url}: not JSON") from exc
    if not isinstance(body, dict):
        raise RegistryError(f"{url}: unexpected JSON")
    return body


def _check_status(response: httpx.Response, what: str) -> None:
    """Anything but 200 is an error; 429 and 5xx (after the client's own retries) may pass."""
    status = response.status_code
    if status == 200:
        return
    if status == 429 or status >= 500:
        raise RegistryUnavailableError(f"{what}: HTTP {status}")
    raise RegistryError(f"{what}: HTTP {status}")


def normalize_pypi(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _pypi_version(filename: str, project: str) -> str | None:
    """The version a distribution's file name carries (sdist or wheel)."""
    stem = filename
    if stem.endswith(".whl"):
        parts = stem[:-4].split("-")
        return parts[1] if len(parts) >= 5 else None
    for suffix in SDIST_SUFFIXES:
        if stem.endswith(suffix):
            stem = stem[: -len(suffix)]
            break
    else:
        return None
    # "<name>-<version>" where the name may itself contain dashes or underscores
    norm = normalize_pypi(project)
    for i in range(len(stem) - 1, 0, -1):
        if stem[i] == "-" and normalize_pypi(stem[:i]) == norm:
            return stem[i + 1 :]
    return stem.rsplit("-", 1)[1] if "-" in stem else None


def _prefer(files: list[ReleaseFile]) -> ReleaseFile:
    """One archive per version: the sdist (source as published), else a pure-Python wheel, else any."""

    def rank(f: ReleaseFile) -> int:
        if f.filename.endswith(SDIST_SUFFIXES):
            return 0
        return 1 if f.filename.endswith("-none-any.whl") else 2

    return min(files, key=lambda f: (rank(f), f.filename))


def pypi_releases(client: httpx.Client, name: str) -> dict[str, ReleaseFile]:
    """Version -> chosen archive, from the PEP 691 JSON simple API (works on mirrors)."""
    body = _get_json(client, urljoin(pypi_index_url(), f"{normalize_pypi(name)}/"), SIMPLE_JSON)
    by_version: dict[str, list[ReleaseFile]] = {}
    entries = body.get("files")
    for entry in entries if isinstance(entries, list) else ():
        if not isinstance(entry, dict) or entry.get("yanked"):
            continue
        filename, url = str(entry.get("filename", "")), str(entry.get("url", ""))
        hashes = entry.get("hashes") or {}
        sha = hashes.get("sha256") if isinstance(hashes, dict) else None
        version = _pypi_version(filename, name)
        if not (version and url and sha):
            continue
        by_version.setdefault(version, []).append(ReleaseFile(version, filename, url, f"sha256={sha}"))
    index = pypi_index_url()
    chosen = (_prefer(files) for files in by_version.values())  # URLs resolved for the chosen file only
    return {f.version: replace(f, url=urljoin(index, f.url)) for f in chosen}


def npm_releases(client: httpx.Client, name: str) -> tuple[dict[str, ReleaseFile], str | None]:
    """Version -> tarball, and the ``latest`` dist-tag, from the abbreviated packument."""
    body = _get_json(client, urljoin(npm_registry_url(), quote(name, safe="@")), NPM_ABBREVIATED)
    out: dict[str, ReleaseFile] = {}
    versions = body.get("versions") or {}
    for version, meta in versions.items() if isinstance(versions, dict) else ():
        dist = meta.get("dist") if isinstance(meta, dict) else None
        if not isinstance(dist, dict) or not dist.get("tarball"):
            continue
        integrity, shasum = dist.get("integrity"), dist.get("shasum")
        if isinstance(integrity, str) and integrity.startswith("sha512-"):
            digest = "sha512=" + integrity.split("-", 1)[1]
        elif isinstance(shasum, str):
            digest = f"sha1={shasum}"
        else:
            continue
        tarball = str(dist["tarball"])
        out[version] = ReleaseFile(version, tarball.rsplit("/", 1)[-1], tarball, digest)
    tags = body.get("dist-tags")
    latest = tags.get("latest") if isinstance(tags, dict) else None
    return out, latest if isinstance(latest, str) else None


def download(client: httpx.Client, release: ReleaseFile) -> bytes:
    try:
        response = client.get(release.url)
    except httpx.HTTPError as exc:
        raise RegistryUnavailableError(f"{release.filename}: {type(exc).__name__}") from exc
    _check_status(response, release.filename)
    data = response.content
    algo, expected = release.digest.split("=", 1)
    digest = hashlib.new(algo, data)
    actual = base64.b64encode(digest.digest()).decode() if algo == "sha512" else digest.hexdigest()
    if actual != expected:
        raise RegistryError(f"{release.filename}: {algo} does not match the registry's digest")
    return data
