"""Compiled Hyperscan databases kept on disk between processes (``worker.core.compiled``).

One file per database, ``<key>-<platform>.hsdb``: the key is the sha256 of what was compiled
(expressions, flags, mode, Hyperscan version), the platform a digest of what this CPU's
Hyperscan compiles for (a database built for other CPU features is not loaded here). The file
holds a magic line, the sha256 of the serialized database, then the database: on load the
digest is checked and Hyperscan deserializes it; anything wrong (truncated, corrupt, another
version) and the database is compiled again and the file replaced.

The folder is trusted only if this user owns it and nobody else may write to it (a planted
database would change what the rules match): otherwise the cache is not used. Files are written
atomically (temporary file, then rename), mode 0600.
"""

from __future__ import annotations

import hashlib
import os
import stat
import tempfile
from functools import cache
from pathlib import Path
from typing import Any

import structlog

from worker.core.compiled import use_cache

log = structlog.get_logger("canary.compiled_cache")

MAGIC = b"canary-hyperscan-1\n"


@cache
def platform_digest() -> str:
    """What databases compiled on this machine are built for (Hyperscan's own description)."""
    import hyperscan

    probe = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
    probe.compile(expressions=[b"probe"], ids=[0], elements=1, flags=[0])
    return hashlib.sha256(str(probe.info()).encode()).hexdigest()[:16]


class FolderCache:
    """Serialized databases in ``folder`` (see the module docstring)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def _path(self, key: str) -> Path:
        return self.folder / f"{key}-{platform_digest()}.hsdb"

    def load(self, key: str, mode: int) -> Any | None:
        import hyperscan

        try:
            raw = self._path(key).read_bytes()
        except OSError:
            return None
        head, _, rest = raw.partition(b"\n")
        digest, _, blob = rest.partition(b"\n")
        if head + b"\n" != MAGIC or hashlib.sha256(blob).hexdigest().encode() != digest:
            log.warning("compiled_cache_mismatch", key=key[:12])
            return None
        try:
            return hyperscan.loadb(blob, mode)
        except (hyperscan.error, ValueError, TypeError):
            log.warning("compiled_cache_unloadable", key=key[:12])
            return None

    def store(self, key: str, database: Any) -> None:
        import hyperscan

        try:
            blob = hyperscan.dumpb(database)
            fd, tmp = tempfile.mkstemp(dir=self.folder, prefix=".tmp-", suffix=".hsdb")
            with os.fdopen(fd, "wb") as out:
                out.write(MAGIC + hashlib.sha256(blob).hexdigest().encode() + b"\n" + blob)
            os.replace(tmp, self._path(key))
        except (OSError, hyperscan.error) as exc:
            log.warning("compiled_cache_not_written", key=key[:12], error=type(exc).__name__)


def trusted_folder(folder: Path) -> bool:
    """Create ``folder`` (0700) if needed; True if this user owns it and no one else may write it."""
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        info = folder.stat()
    except OSError:
        return False
    return info.st_uid == os.getuid() and not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def enable(folder: Path | None) -> bool:
    """Serve compiled databases from ``folder`` in this process; False (and no cache) if it cannot."""
    try:
        import hyperscan  # noqa: F401
    except ImportError:
        return False
    if folder is None or not trusted_folder(folder):
        if folder is not None:
            log.warning("compiled_cache_untrusted", folder=str(folder))
        use_cache(None)
        return False
    use_cache(FolderCache(folder))
    return True
