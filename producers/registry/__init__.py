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

Modules: ``versions`` (specs, version order), ``clients`` (the registries over HTTP),
``archives`` (opened in memory), ``diff`` (the patience diff), ``release`` (the two halves
put together), ``polite`` (per-host limits and retries with backoff, the client's transport) and
``pool`` (many releases at once: threads fetch, processes diff). A worker fetches one release per
task instead (``worker.pipeline.fetch``, the ``canary.fetch`` queue).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from producers.registry.archives import archive_files
    from producers.registry.clients import (
        ReleaseFile,
        download,
        npm_registry_url,
        npm_releases,
        pypi_index_url,
        pypi_releases,
    )
    from producers.registry.diff import unified_diff
    from producers.registry.errors import RegistryError, RegistryUnavailableError
    from producers.registry.polite import Politeness, PoliteTransport, polite_client
    from producers.registry.release import (
        Release,
        ReleaseArchives,
        ReleaseDiff,
        ReleaseRef,
        diff_archives,
        download_release,
        fetch_archives,
        parse_spec,
        release_diff,
        release_key,
        resolve_release,
    )
    from producers.registry.versions import is_spec

# Where each name lives. Loaded on first use: a ``canary scan`` of local files needs only
# ``versions`` and ``errors``, not the HTTP client (httpx) and archive readers the rest pull in.
_HOMES = {
    "archive_files": "archives",
    **dict.fromkeys(
        ("ReleaseFile", "download", "npm_registry_url", "npm_releases", "pypi_index_url", "pypi_releases"),
        "clients",
    ),
    "unified_diff": "diff",
    "RegistryError": "errors",
    "RegistryUnavailableError": "errors",
    **dict.fromkeys(("Politeness", "PoliteTransport", "polite_client"), "polite"),
    **dict.fromkeys(
        (
            "Release",
            "ReleaseArchives",
            "ReleaseDiff",
            "ReleaseRef",
            "diff_archives",
            "download_release",
            "fetch_archives",
            "parse_spec",
            "release_diff",
            "release_key",
            "resolve_release",
        ),
        "release",
    ),
    "is_spec": "versions",
}


def __getattr__(name: str) -> Any:
    """A public name (or a submodule) of this package, imported on first use."""
    module = _HOMES.get(name)
    try:
        found = importlib.import_module(f"{__name__}.{module or name}")
    except ModuleNotFoundError as exc:
        if exc.name != f"{__name__}.{module or name}":
            raise
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    value = getattr(found, name) if module else found
    globals()[name] = value
    return value


__all__ = [
    "Politeness",
    "PoliteTransport",
    "RegistryError",
    "RegistryUnavailableError",
    "Release",
    "ReleaseArchives",
    "ReleaseDiff",
    "ReleaseFile",
    "ReleaseRef",
    "archive_files",
    "diff_archives",
    "download",
    "download_release",
    "fetch_archives",
    "is_spec",
    "npm_registry_url",
    "npm_releases",
    "parse_spec",
    "polite_client",
    "pypi_index_url",
    "pypi_releases",
    "release_diff",
    "release_key",
    "resolve_release",
    "unified_diff",
]
