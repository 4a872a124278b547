"""Package registries as artifacts: a release, as the unified diff against its predecessor.

``pypi:NAME[==VERSION]`` and ``npm:NAME[@VERSION]`` name a release (the newest
when no version is given). The release's archive and the previous version's
archive are downloaded, checked against the digests the registry publishes,
opened **in memory** (nothing is extracted to disk, nothing is imported or
run) and turned into one git-style unified diff over every file: the artifact
the ``malicious-package`` policy is written for. A first release is a diff
against nothing.

Registry addresses come from the ordinary clients' own configuration, so a
company mirror is used automatically: ``CANARY_PYPI_INDEX_URL``, else pip's
``PIP_INDEX_URL`` / default index; ``CANARY_NPM_REGISTRY``, else
``NPM_CONFIG_REGISTRY`` / ``npm config get registry``.

Nothing is truncated: an archive over the size limit is refused with an error
(the caller reports it and exits non-zero) rather than diffed in part.
"""

from __future__ import annotations

import base64
import bisect
import difflib
import hashlib
import io
import os
import re
import shutil
import subprocess
import tarfile
import zipfile
import zlib
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cache
from urllib.parse import quote, urljoin

import httpx

from worker.core.errors import CanaryError

SPEC = re.compile(r"^(?P<eco>pypi|npm):(?P<rest>.+)$")
MAX_ARCHIVE_BYTES = 512 * 1024 * 1024  # uncompressed, per archive
MAX_MEMBERS = 100_000
SIMPLE_JSON = "application/vnd.pypi.simple.v1+json"
NPM_ABBREVIATED = "application/vnd.npm.install-v1+json"
SDIST_SUFFIXES = (".tar.gz", ".tgz", ".tar.bz2", ".tar.xz", ".zip")


class RegistryError(CanaryError):
    """A release could not be fetched, verified or opened; nothing was gated for it."""


@dataclass(frozen=True)
class ReleaseFile:
    version: str
    filename: str
    url: str
    digest: str  # "sha256=<hex>", "sha512=<base64>" or "sha1=<hex>"


@dataclass(frozen=True)
class ReleaseDiff:
    label: str  # e.g. "pypi:requests:2.32.2->2.32.3" or "npm:left-pad:1.0.0:new-package"
    data: bytes


def is_spec(text: str) -> bool:
    return SPEC.match(text) is not None


# --- versions ---------------------------------------------------------------------------------


def _pep440_key(version: str) -> tuple[object, ...]:
    from packaging.version import InvalidVersion, Version

    try:
        return (1, Version(version))
    except InvalidVersion:  # legacy versions sort first, by text
        return (0, version)


_SEMVER = re.compile(r"^v?(\d+)\.(\d+)\.(\d+)(?:-([0-9A-Za-z.-]+))?(?:\+[0-9A-Za-z.-]+)?$")


def _semver_key(version: str) -> tuple[object, ...]:
    m = _SEMVER.match(version)
    if not m:
        return (0, version)
    pre = m.group(4)
    # A pre-release sorts before its release; numeric identifiers compare as numbers.
    pre_key: tuple[object, ...] = (
        (1,) if pre is None else (0, *((0, int(p), "") if p.isdigit() else (1, 0, p) for p in pre.split(".")))
    )
    return (1, int(m.group(1)), int(m.group(2)), int(m.group(3)), pre_key)


def _is_prerelease(eco: str, version: str) -> bool:
    if eco == "npm":
        return "-" in version.split("+", 1)[0]
    from packaging.version import InvalidVersion, Version

    try:
        return Version(version).is_prerelease
    except InvalidVersion:
        return False


# --- registry addresses -------------------------------------------------------------------------


def pypi_index_url() -> str:
    url = os.environ.get("CANARY_PYPI_INDEX_URL") or os.environ.get("PIP_INDEX_URL")
    if not url:
        try:
            from pip._internal.models.index import PyPI

            url = PyPI.simple_url
        except ImportError as exc:
            raise RegistryError("set CANARY_PYPI_INDEX_URL to a PEP 691 simple index") from exc
    return url.rstrip("/") + "/"


def npm_registry_url() -> str:
    url = os.environ.get("CANARY_NPM_REGISTRY") or os.environ.get("NPM_CONFIG_REGISTRY") or _npm_config()
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


# --- the two registries -------------------------------------------------------------------------


def _get_json(client: httpx.Client, url: str, accept: str) -> dict[str, object]:
    try:
        response = client.get(url, headers={"Accept": accept})
    except httpx.HTTPError as exc:
        raise RegistryError(f"{url}: {type(exc).__name__}") from exc
    if response.status_code == 404:
        raise RegistryError(f"{url}: not found")
    if response.status_code != 200:
        raise RegistryError(f"{url}: HTTP {response.status_code}")
    try:
        body = response.json()
    except ValueError as exc:
        raise RegistryError(f"{url}: not JSON") from exc
    if not isinstance(body, dict):
        raise RegistryError(f"{url}: unexpected JSON")
    return body


def _normalize_pypi(name: str) -> str:
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
    norm = _normalize_pypi(project)
    for i in range(len(stem) - 1, 0, -1):
        if stem[i] == "-" and _normalize_pypi(stem[:i]) == norm:
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
    body = _get_json(client, urljoin(pypi_index_url(), f"{_normalize_pypi(name)}/"), SIMPLE_JSON)
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


# --- archives -----------------------------------------------------------------------------------


def download(client: httpx.Client, release: ReleaseFile) -> bytes:
    try:
        response = client.get(release.url)
    except httpx.HTTPError as exc:
        raise RegistryError(f"{release.filename}: {type(exc).__name__}") from exc
    if response.status_code != 200:
        raise RegistryError(f"{release.filename}: HTTP {response.status_code}")
    data = response.content
    algo, expected = release.digest.split("=", 1)
    digest = hashlib.new(algo, data)
    actual = base64.b64encode(digest.digest()).decode() if algo == "sha512" else digest.hexdigest()
    if actual != expected:
        raise RegistryError(f"{release.filename}: {algo} does not match the registry's digest")
    return data


def archive_files(data: bytes, filename: str) -> dict[str, bytes]:
    """Regular files of an archive, in memory, with the common top-level folder removed.

    Links, devices and absolute or ``..`` paths are skipped (they are never
    written anywhere, but they are not package content either). Over
    ``MAX_ARCHIVE_BYTES`` or ``MAX_MEMBERS`` raises rather than truncating.
    """
    files: dict[str, bytes] = {}
    total = 0

    def admit(size: int) -> None:
        nonlocal total
        total += size
        if total > MAX_ARCHIVE_BYTES or len(files) >= MAX_MEMBERS:
            raise RegistryError(f"{filename}: archive larger than the limit; not gated in part")

    def keep(path: str, content: bytes) -> None:
        clean = path.replace("\\", "/")
        while clean.startswith("./"):
            clean = clean[2:]
        if clean and not clean.startswith("/") and ".." not in clean.split("/"):
            files[clean] = content

    try:
        if filename.endswith((".zip", ".whl")):
            with zipfile.ZipFile(io.BytesIO(data)) as zf:
                for info in zf.infolist():
                    if not info.is_dir():
                        admit(info.file_size)
                        keep(info.filename, zf.read(info))
        else:
            with tarfile.open(fileobj=io.BytesIO(_gunzip(data, filename) or data), mode="r:*") as tf:
                for member in tf:
                    if member.isfile():
                        admit(member.size)
                        handle = tf.extractfile(member)
                        keep(member.name, handle.read() if handle else b"")
    except (tarfile.TarError, zipfile.BadZipFile, EOFError, OSError) as exc:
        raise RegistryError(f"{filename}: unreadable archive ({type(exc).__name__})") from exc
    return _strip_top(files)


def _gunzip(data: bytes, filename: str) -> bytes | None:
    """A single-member gzip stream inflated in one call (tarfile's stream reads it in small pieces,
    at about a third of the cost of reading a release); ``None`` when it is not one.

    Inflation stops past the archive limit plus room for tar headers, so a bomb raises before it
    is held in memory.
    """
    if data[:2] != b"\x1f\x8b":
        return None
    inflater = zlib.decompressobj(wbits=31)
    try:
        out = inflater.decompress(data, MAX_ARCHIVE_BYTES + 1024 * MAX_MEMBERS)
    except zlib.error:
        return None  # let tarfile report it
    if inflater.unconsumed_tail:
        raise RegistryError(f"{filename}: archive larger than the limit; not gated in part")
    return out if inflater.eof and not inflater.unused_data else None


def _strip_top(files: dict[str, bytes]) -> dict[str, bytes]:
    tops = {p.split("/", 1)[0] for p in files}
    if len(tops) == 1 and all("/" in p for p in files):
        return {p.split("/", 1)[1]: c for p, c in files.items()}
    return files


# --- the diff -----------------------------------------------------------------------------------


def _text(content: bytes) -> list[str] | None:
    if b"\0" in content[:8192]:
        return None
    try:
        return content.decode("utf-8").splitlines(keepends=True)
    except UnicodeDecodeError:
        return None


def _matching_blocks(a: Sequence[str], b: Sequence[str]) -> list[tuple[int, int, int]]:
    """Patience diff: common ends trimmed, lines unique to both sides anchor, the rest recurses.

    Linear-ish on the large regenerated files releases are full of, where
    difflib's matcher is quadratic; difflib is only used for gaps without a
    unique common line.
    """
    runs: list[tuple[int, int, int]] = []  # (i, j, size): a[i:i+size] == b[j:j+size]
    todo = [(0, len(a), 0, len(b))]
    while todo:
        alo, ahi, blo, bhi = todo.pop()
        start = alo
        while alo < ahi and blo < bhi and a[alo] == b[blo]:
            alo, blo = alo + 1, blo + 1
        if alo > start:
            runs.append((start, blo - (alo - start), alo - start))
        end = ahi
        while alo < ahi and blo < bhi and a[ahi - 1] == b[bhi - 1]:
            ahi, bhi = ahi - 1, bhi - 1
        if end > ahi:
            runs.append((ahi, bhi, end - ahi))
        if alo == ahi or blo == bhi:
            continue
        count_a = Counter(a[alo:ahi])
        count_b = Counter(b[blo:bhi])
        where_b = {line: j for j, line in enumerate(b[blo:bhi], blo) if count_b[line] == 1}
        pairs = [
            (i, where_b[line])
            for i, line in enumerate(a[alo:ahi], alo)
            if count_a[line] == 1 and line in where_b
        ]
        if not pairs:
            sm = difflib.SequenceMatcher(None, a[alo:ahi], b[blo:bhi], autojunk=False)
            runs.extend((alo + i, blo + j, size) for i, j, size in sm.get_matching_blocks() if size)
            continue
        anchors = _longest_increasing(pairs)
        pa, pb = alo, blo
        for i, j in anchors:
            todo.append((pa, i, pb, j))
            runs.append((i, j, 1))
            pa, pb = i + 1, j + 1
        todo.append((pa, ahi, pb, bhi))
    blocks: list[tuple[int, int, int]] = []
    for i, j, size in sorted(runs):
        if blocks and blocks[-1][0] + blocks[-1][2] == i and blocks[-1][1] + blocks[-1][2] == j:
            blocks[-1] = (blocks[-1][0], blocks[-1][1], blocks[-1][2] + size)
        else:
            blocks.append((i, j, size))
    blocks.append((len(a), len(b), 0))
    return blocks


def _longest_increasing(pairs: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The longest run of ``pairs`` (sorted by a-position) whose b-positions increase (patience sorting)."""
    tails: list[int] = []
    tail_at: list[int] = []
    back = [-1] * len(pairs)
    for n, (_, j) in enumerate(pairs):
        k = bisect.bisect_left(tails, j)
        if k == len(tails):
            tails.append(j)
            tail_at.append(n)
        else:
            tails[k], tail_at[k] = j, n
        back[n] = tail_at[k - 1] if k else -1
    run: list[tuple[int, int]] = []
    n = tail_at[-1]
    while n >= 0:
        run.append(pairs[n])
        n = back[n]
    return run[::-1]


class _PatienceMatcher(difflib.SequenceMatcher[str]):
    # Instance attributes difflib sets (set_seqs) that typeshed does not declare; annotations only.
    a: Sequence[str]
    b: Sequence[str]
    matching_blocks: list[difflib.Match] | None

    def _SequenceMatcher__chain_b(self) -> None:  # overrides difflib's private b-index builder
        """No index of ``b``: the patience matcher never uses difflib's ``b2j`` (it built one per file)."""

    def get_matching_blocks(self) -> list[difflib.Match]:
        if self.matching_blocks is None:
            self.matching_blocks = [difflib.Match(*m) for m in _matching_blocks(self.a, self.b)]
        return self.matching_blocks


def _range(start: int, stop: int) -> str:
    length = stop - start
    if length == 1:
        return str(start + 1)
    return f"{start + 1 if length else start},{length}"


def _hunks(a: list[str], b: list[str], name_a: str, name_b: str, context: int = 3) -> Iterator[str]:
    """``difflib.unified_diff``'s output, over the patience matcher."""
    for number, group in enumerate(_PatienceMatcher(None, a, b).get_grouped_opcodes(context)):
        if number == 0:
            yield f"--- {name_a}\n"
            yield f"+++ {name_b}\n"
        first, last = group[0], group[-1]
        yield f"@@ -{_range(first[1], last[2])} +{_range(first[3], last[4])} @@\n"
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                yield from (" " + line for line in a[i1:i2])
                continue
            if tag in ("replace", "delete"):
                yield from ("-" + line for line in a[i1:i2])
            if tag in ("replace", "insert"):
                yield from ("+" + line for line in b[j1:j2])


def unified_diff(old: Mapping[str, bytes], new: Mapping[str, bytes]) -> bytes:
    """One git-style diff over every changed file (sorted by path); binary files by name."""
    out: list[str] = []
    for path in sorted(set(old) | set(new)):
        before, after = old.get(path), new.get(path)
        if before == after:
            continue
        a = "/dev/null" if before is None else f"a/{path}"
        b = "/dev/null" if after is None else f"b/{path}"
        out.append(f"diff --git a/{path} b/{path}\n")
        if before is None:
            out.append("new file mode 100644\n")
        elif after is None:
            out.append("deleted file mode 100644\n")
        lines_a = [] if before is None else _text(before)
        lines_b = [] if after is None else _text(after)
        if lines_a is None or lines_b is None:
            out.append(f"Binary files {a} and {b} differ\n")
            continue
        for line in _hunks(lines_a, lines_b, a, b):
            out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(out).encode()


# --- specs --------------------------------------------------------------------------------------


def _split(eco: str, rest: str) -> tuple[str, str | None]:
    if eco == "pypi":
        name, _, version = rest.partition("==")
        return name.strip(), version.strip() or None
    at = rest.rfind("@")
    if at > 0:  # "@scope/name@1.2.3"; a leading "@" is the scope, not a version
        return rest[:at], rest[at + 1 :] or None
    return rest, None


@dataclass(frozen=True)
class ReleaseArchives:
    """A release's archive and its predecessor's, downloaded and verified, not opened yet."""

    label: str
    new: bytes
    new_name: str
    old: bytes | None = None  # None: a first release, diffed against nothing
    old_name: str = ""


def fetch_archives(client: httpx.Client, spec: str) -> ReleaseArchives:
    """Fetch the release a spec names and its predecessor (the network half of :func:`release_diff`)."""
    m = SPEC.match(spec)
    if not m:
        raise RegistryError(f"not a registry spec: {spec!r} (pypi:NAME[==VER] or npm:NAME[@VER])")
    eco = m.group("eco")
    name, version = _split(eco, m.group("rest"))
    if not name:
        raise RegistryError(f"no package name in {spec!r}")
    if eco == "pypi":
        releases, key = pypi_releases(client, name), _pep440_key
        latest = None
    else:
        (releases, latest), key = npm_releases(client, name), _semver_key
    if not releases:
        raise RegistryError(f"{eco}:{name}: no downloadable releases")
    ordered = sorted(releases, key=key)
    final = [v for v in ordered if not _is_prerelease(eco, v)]
    target = version or latest or (final or ordered)[-1]  # like pip/npm: newest final release
    if target not in releases:
        raise RegistryError(f"{eco}:{name}: no release {target}")
    older = [v for v in ordered if key(v) < key(target)]
    new = releases[target]
    if not older:
        return ReleaseArchives(f"{eco}:{name}:{target}:new-package", download(client, new), new.filename)
    old = releases[older[-1]]
    return ReleaseArchives(
        f"{eco}:{name}:{older[-1]}->{target}",
        download(client, new),
        new.filename,
        download(client, old),
        old.filename,
    )


def diff_archives(archives: ReleaseArchives) -> ReleaseDiff:
    """Open both archives in memory and diff them (the CPU half of :func:`release_diff`)."""
    new_files = archive_files(archives.new, archives.new_name)
    old_files = {} if archives.old is None else archive_files(archives.old, archives.old_name)
    return ReleaseDiff(archives.label, unified_diff(old_files, new_files))


def release_diff(client: httpx.Client, spec: str) -> ReleaseDiff:
    """Fetch the release a spec names and its predecessor; diff them."""
    return diff_archives(fetch_archives(client, spec))
