"""Where a rule set's compiled Hyperscan database comes from: compiled here, or a cache.

Compiling the shipped rule sets costs seconds of CPU in every process that scans (6 CPU-s under
prompt-injection, 14 under malicious-package, before this cache). A database depends only on
what was compiled: its expressions, flags and mode, and the Hyperscan version. That content's
sha256 keys it; the shell injects a cache (``worker.adapters.compiled_cache``) that keeps the
serialized databases on disk, checks them on load and rebuilds on any mismatch. Without one
(the default, and in tests of the core) every database is compiled.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from typing import Any, Protocol


class DatabaseCache(Protocol):
    def load(self, key: str, mode: int) -> Any | None:
        """The database stored under ``key``, or None (absent, corrupt, not loadable here)."""

    def store(self, key: str, database: Any) -> None:
        """Keep ``database`` under ``key`` (best effort: a failure only costs the next compile)."""


_CACHE: list[DatabaseCache] = []


def use_cache(cache: DatabaseCache | None) -> None:
    """Serve compiled databases from ``cache`` in this process (None: compile every time)."""
    _CACHE[:] = [cache] if cache is not None else []


def database_key(version: str, mode: int, expressions: Sequence[bytes], flags: Sequence[int]) -> str:
    """The sha256 of exactly what a database is compiled from."""
    content = json.dumps([version, mode, [e.hex() for e in expressions], list(flags)])
    return hashlib.sha256(content.encode()).hexdigest()


def compiled_database(key: str, mode: int, build: Callable[[], Any]) -> Any:
    """The database for ``key``: from the cache when it holds a sound copy, else ``build()`` (kept)."""
    if not _CACHE:
        return build()
    cache = _CACHE[0]
    database = cache.load(key, mode)
    if database is None:
        database = build()
        cache.store(key, database)
    return database
