"""A release as an artifact: fetch it and its predecessor (network), then diff them (CPU)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import httpx

from producers.registry.archives import archive_files
from producers.registry.clients import ReleaseFile, download, normalize_pypi, npm_releases, pypi_releases
from producers.registry.diff import unified_diff
from producers.registry.errors import RegistryError
from producers.registry.versions import SPEC, _is_prerelease, _pep440_key, _semver_key, _split


@dataclass(frozen=True)
class ReleaseDiff:
    label: str  # e.g. "pypi:requests:2.32.2->2.32.3" or "npm:left-pad:1.0.0:new-package"
    data: bytes


@dataclass(frozen=True)
class ReleaseRef:
    """A release by name, read from a spec without the network: ``version`` None means the
    newest final release, ``previous`` None the version just before it (both resolved on fetch)."""

    ecosystem: str
    name: str
    version: str | None = None
    previous: str | None = None

    @property
    def spec(self) -> str:
        if self.version is None:
            return f"{self.ecosystem}:{self.name}"
        return f"{self.ecosystem}:{self.name}{'==' if self.ecosystem == 'pypi' else '@'}{self.version}"


def parse_spec(spec: str, previous: str | None = None) -> ReleaseRef:
    """``pypi:NAME[==VER]`` / ``npm:NAME[@VER]`` as a :class:`ReleaseRef`; RegistryError if malformed."""
    m = SPEC.match(spec)
    if not m:
        raise RegistryError(f"not a registry spec: {spec!r} (pypi:NAME[==VER] or npm:NAME[@VER])")
    eco = m.group("eco")
    name, version = _split(eco, m.group("rest"))
    if not name:
        raise RegistryError(f"no package name in {spec!r}")
    return ReleaseRef(eco, name, version, previous)


@dataclass(frozen=True)
class ReleaseArchives:
    """A release's archive and its predecessor's, downloaded and verified, not opened yet."""

    label: str
    new: bytes
    new_name: str
    old: bytes | None = None  # None: a first release, diffed against nothing
    old_name: str = ""


@dataclass(frozen=True)
class Release:
    """A release resolved from the registry's metadata (the version and its predecessor known),
    nothing downloaded yet."""

    ecosystem: str
    name: str
    version: str
    new: ReleaseFile
    old: ReleaseFile | None  # None: a first release, diffed against nothing

    @property
    def label(self) -> str:
        """The artifact's source name: ``eco:name:old->new`` or ``eco:name:new:new-package``."""
        if self.old is None:
            return f"{self.ecosystem}:{self.name}:{self.version}:new-package"
        return f"{self.ecosystem}:{self.name}:{self.old.version}->{self.version}"

    @property
    def key(self) -> str:
        return release_key(self.ecosystem, self.name, self.version)


def release_key(ecosystem: str, name: str, version: str) -> str:
    """A release whatever the spelling of its name: ``pypi:demo-pkg==1.0``, ``npm:@s/x@1.0``."""
    if ecosystem == "pypi":
        return f"pypi:{normalize_pypi(name)}=={version}"
    return f"{ecosystem}:{name}@{version}"


def resolve_release(client: httpx.Client, spec: str | ReleaseRef) -> Release:
    """The release a spec or reference names and its predecessor, from the registry's metadata
    only. A reference whose ``previous`` is known is diffed against that version (it must exist)."""
    ref = parse_spec(spec) if isinstance(spec, str) else spec
    eco, name, version = ref.ecosystem, ref.name, ref.version
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
    if ref.previous is not None and ref.previous not in releases:
        raise RegistryError(f"{eco}:{name}: no release {ref.previous} (given as the previous version)")
    previous = ref.previous or (older[-1] if older else None)
    return Release(eco, name, target, releases[target], None if previous is None else releases[previous])


def download_release(client: httpx.Client, release: Release) -> ReleaseArchives:
    """Download and verify a resolved release's archive and its predecessor's, at the same time."""
    new, old = release.new, release.old
    if old is None:
        return ReleaseArchives(release.label, download(client, new), new.filename)
    with ThreadPoolExecutor(1, thread_name_prefix="canary-fetch-old") as side:  # both at once
        old_data = side.submit(download, client, old)
        new_data = download(client, new)
        return ReleaseArchives(release.label, new_data, new.filename, old_data.result(), old.filename)


def fetch_archives(client: httpx.Client, spec: str | ReleaseRef) -> ReleaseArchives:
    """Fetch the release a spec names and its predecessor (the network half of :func:`release_diff`):
    :func:`resolve_release`, then :func:`download_release`."""
    return download_release(client, resolve_release(client, spec))


def diff_archives(archives: ReleaseArchives) -> ReleaseDiff:
    """Open both archives in memory and diff them (the CPU half of :func:`release_diff`)."""
    new_files = archive_files(archives.new, archives.new_name)
    old_files = {} if archives.old is None else archive_files(archives.old, archives.old_name)
    return ReleaseDiff(archives.label, unified_diff(old_files, new_files))


def release_diff(client: httpx.Client, spec: str | ReleaseRef) -> ReleaseDiff:
    """Fetch the release a spec names and its predecessor; diff them."""
    return diff_archives(fetch_archives(client, spec))
