"""Which files of a package release are what: install manifests, generated metadata, globs.

Read by the diff parser (a file's ``manifest`` flag, a manifest-only release) and by rules that
name files (``path_matches``).
"""

from __future__ import annotations

from fnmatch import fnmatch
from posixpath import basename

__all__ = ["INSTALL_MANIFESTS", "is_manifest", "is_package_metadata", "path_matches"]

INSTALL_MANIFESTS = frozenset({"package.json", "setup.py", "setup.cfg", "pyproject.toml"})
_METADATA = frozenset(
    {"package-lock.json", "npm-shrinkwrap.json", "yarn.lock", "pnpm-lock.yaml", "poetry.lock", "uv.lock"}
    | {"Pipfile.lock", "PKG-INFO", "METADATA", "RECORD", "WHEEL", "SOURCES.txt", "top_level.txt"}
)


def is_manifest(path: str) -> bool:
    """Files whose changes can run code at install time: manifests and ``.pth`` files."""
    name = basename(path)
    return name in INSTALL_MANIFESTS or name.endswith(".pth")


def path_matches(path: str, globs: tuple[str, ...]) -> bool:
    """Whether ``path``, or its file name alone, matches one of ``globs``."""
    return any(fnmatch(path, g) or fnmatch(basename(path), g) for g in globs)


def is_package_metadata(path: str) -> bool:
    """Lockfiles and generated package metadata: changed by releases, never code."""
    return basename(path) in _METADATA or ".egg-info/" in path or ".dist-info/" in path
