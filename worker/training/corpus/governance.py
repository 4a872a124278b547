"""Projects' own governance documents, as the releases ship them: hard negatives.

A release carries the files a project keeps for its people: a code of conduct ("in your report
please include your contact information, the names of those involved..."), a security policy
("do not open a public issue; e-mail security@... with the details"), a contributing guide, issue
and pull-request templates, a support page, and lately an ``AGENTS.md`` or
``.github/copilot-instructions.md`` with ordinary coding guidance for AI assistants. They ask the
reader to send information somewhere, to keep it private and to run commands: the shape of an
injection, written for people (or, in an ``AGENTS.md``, for an assistant doing ordinary work). A
real release's code of conduct was blocked by both models on its reporting paragraph
(``docs/measurements.md``), and the generated contributing guides of :mod:`.build` are a few
phrasings in one voice.

``fetch`` reads the source distribution (PyPI) or the tarball (npm) of the most popular packages
in memory (nothing is extracted or run) and keeps the governance files it holds, under each
package's own licence, into ``<cache>/governance/<ecosystem>/``; held-out and real-release-sample
names are dropped before any request. ``covenant DIR`` adds the Contributor Covenant's
translations (``EthicalSource/contributor_covenant``, ``content/version/``; CC BY 4.0), its
placeholders filled. Each distinct document becomes one harmless record, as the file a release
diff adds or bare, a half each; a document longer than ``MAX_DOCUMENT`` lends a line-aligned
slice. One CV group per package. A record the policy's pre-check blocks is left out: of 1,171,
one contributing guide that opens with a hidden order to AI agents (prompt injection by the
product's decision).
"""

from __future__ import annotations

import hashlib
import io
import json
import random
import re
import tarfile
import zipfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import httpx

from worker.training.corpus import package_parts, registry
from worker.training.corpus.build import record
from worker.training.corpus.registry import PYPI_JSON
from worker.training.corpus.releases import line_slice
from worker.training.data import GOVERNANCE_FILE

SOURCE = "governance files of PyPI sdists and npm tarballs; Contributor Covenant translations (EthicalSource/contributor_covenant c104cdf)"
FILE_NAME = GOVERNANCE_FILE.name
GROUP_PREFIX = "governance:"
MAX_ARCHIVE = 8 << 20  # bytes: a larger archive is skipped
MAX_FILE = 256 << 10  # bytes: a larger governance file is not kept
MAX_DOCUMENT = 24 << 10  # bytes of one record: a longer document lends a slice
SAME_OPENING = 3  # copies kept of documents that open alike (templates copied between projects)
COVENANT_LICENCE = "CC-BY-4.0"

# A governance file by its name: anywhere in the archive, with or without a text extension.
_NAMES = re.compile(
    r"(?:^|/)(?:code[-_ ]?of[-_ ]?conduct|contributing|security|support|governance|maintainers"
    r"|agents|claude|gemini|copilot-instructions|pull_request_template|ai[-_](?:policy|usage|guidelines"
    r"|contributions?))(?:\.(?:md|rst|txt|markdown))?$",
    re.IGNORECASE,
)
_TEMPLATES = re.compile(r"(?:^|/)\.github/(?:issue_template|discussion_template)/[^/]+\.(?:md|ya?ml)$", re.I)
_FRONT_MATTER = re.compile(r"\A---\n.*?\n---\n", re.DOTALL)
_PLACEHOLDER = re.compile(r"\[(?:INSERT[^\]]*|CONTACT[^\]]*|[A-Z][A-Z ]{6,})\]")


def governance_path(path: str) -> bool:
    """Whether an archive member's path names a governance document."""
    return bool(_NAMES.search(path) or _TEMPLATES.search(path))


def archive_documents(data: bytes, kind: str) -> list[tuple[str, str]]:
    """``(path inside the project, text)`` of the governance files of an archive read in memory."""
    found: list[tuple[str, str]] = []
    try:
        if kind == "zip":
            with zipfile.ZipFile(io.BytesIO(data)) as archive:
                for info in archive.infolist():
                    if not info.is_dir() and info.file_size <= MAX_FILE and governance_path(info.filename):
                        found.append((info.filename, archive.read(info).decode("utf-8", "replace")))
        else:
            with tarfile.open(fileobj=io.BytesIO(data), mode="r:*") as tar:
                for member in tar:
                    if member.isfile() and member.size <= MAX_FILE and governance_path(member.name):
                        handle = tar.extractfile(member)
                        if handle is not None:
                            found.append((member.name, handle.read().decode("utf-8", "replace")))
    except (tarfile.TarError, zipfile.BadZipFile, OSError, EOFError, ValueError):
        return []
    return [(path.split("/", 1)[-1], text) for path, text in found]  # without the archive's top folder


def _pypi(client: httpx.Client, name: str) -> dict[str, Any] | None:
    response = client.get(PYPI_JSON.format(name=name))
    if response.status_code != 200:
        return None
    meta = response.json()
    sdists = [u for u in meta.get("urls") or [] if u.get("packagetype") == "sdist"]
    if not sdists or (sdists[0].get("size") or 0) > MAX_ARCHIVE:
        return None
    url = str(response.url.join(sdists[0]["url"]))  # a mirror may answer with relative addresses
    data = registry.download(client, url, MAX_ARCHIVE)
    if data is None:
        return None
    info = meta["info"]
    kind = "zip" if url.endswith(".zip") else "tar"
    return {"name": name, "version": info.get("version") or "", "license": registry.pypi_licence(info),
            "files": archive_documents(data, kind)}  # fmt: skip


def _npm(client: httpx.Client, name: str) -> dict[str, Any] | None:
    found = registry.npm_release(client, name, MAX_ARCHIVE)
    if found is None:
        return None
    manifest, tarball = found
    return {"name": name, "version": manifest.get("version", ""), "license": registry.npm_licence(manifest),
            "files": archive_documents(tarball, "tar")}  # fmt: skip


def fetch_governance(ecosystem: str, names: Iterable[str], cache: Path, workers: int = 8) -> int:
    """Keep each package's governance files in ``cache/governance/<ecosystem>/``; names already
    there (with files, without, or failed) are skipped. Returns how many were asked for."""
    getter = _pypi if ecosystem == "pypi" else _npm
    return registry.cache_each(cache / "governance" / ecosystem, names, getter, {"files": []}, 60, workers)


def cached_documents(cache: Path) -> list[tuple[str, str, str, str, str]]:
    """``(ecosystem, package, licence, path, text)`` of every cached governance file, sorted."""
    out = []
    for ecosystem in ("pypi", "npm"):
        for path in sorted((cache / "governance" / ecosystem).glob("*.json")):
            found = json.loads(path.read_text(encoding="utf-8"))
            for member, text in found.get("files") or []:
                if text.strip():
                    out.append((ecosystem, found["name"], found.get("license") or "unknown", member, text))
    return out


def covenant_documents(folder: Path, rng: random.Random) -> list[tuple[str, str]]:
    """``(version/file, text)`` of the Contributor Covenant translations under ``folder`` (its
    ``content/version/``), front matter dropped and placeholders filled with a contact."""
    out = []
    for path in sorted(folder.rglob("*.md")):
        if "conduct" not in path.name.replace("-", "_"):
            continue
        text = _FRONT_MATTER.sub("", path.read_text(encoding="utf-8", errors="replace"))
        contact = f"{rng.choice(('conduct', 'community', 'coc', 'maintainers'))}@{rng.choice(package_parts.WORDS)}.org"
        out.append((str(path.relative_to(folder)), _PLACEHOLDER.sub(contact, text)))
    return out


def _opening(text: str) -> str:
    return " ".join(re.findall(r"\w+", text.lower())[:40])


def governance_records(
    documents: list[tuple[str, str, str, str, str]],
    seed: int = 0,
    contested: Callable[[str], bool] | None = None,
) -> list[dict[str, Any]]:
    """One harmless record per distinct document (exact copies dropped, ``SAME_OPENING`` kept of
    those that open alike), as the file a diff adds or bare, a half each. A record that
    ``contested`` flags is dropped: a maintainer's hidden note that gives orders to AI agents is
    prompt injection (the product's decision), not a harmless look-alike."""
    rng = random.Random(seed)
    seen: set[str] = set()
    openings: dict[str, int] = {}
    out: list[dict[str, Any]] = []
    for ecosystem, package, licence, member, text in documents:
        digest = hashlib.sha256(" ".join(text.split()).encode()).hexdigest()
        opening = _opening(text)
        if digest in seen or openings.get(opening, 0) >= SAME_OPENING:
            continue
        seen.add(digest)
        openings[opening] = openings.get(opening, 0) + 1
        body = line_slice(rng, text.encode("utf-8"), MAX_DOCUMENT).decode("utf-8", "ignore")
        carrier = "diff" if rng.random() < 0.5 else "bare"
        shown = package_parts.diff([(member, body)]) if carrier == "diff" else body
        if contested is not None and contested(shown):
            continue
        out.append(
            record(
                "governance",
                len(out),
                shown,
                0,
                f"{ecosystem} {package}: {member}",
                licence,
                f"{GROUP_PREFIX}{ecosystem}:{package}",
                f"{member.rsplit('/', 1)[-1]} in {carrier}",
            )
        )
    return out
