"""Release specs (``pypi:NAME[==VER]``, ``npm:NAME[@VER]``) and how each ecosystem orders versions."""

from __future__ import annotations

import re

SPEC = re.compile(r"^(?P<eco>pypi|npm):(?P<rest>.+)$")


def is_spec(text: str) -> bool:
    return SPEC.match(text) is not None


def _split(eco: str, rest: str) -> tuple[str, str | None]:
    if eco == "pypi":
        name, _, version = rest.partition("==")
        return name.strip(), version.strip() or None
    at = rest.rfind("@")
    if at > 0:  # "@scope/name@1.2.3"; a leading "@" is the scope, not a version
        return rest[:at], rest[at + 1 :] or None
    return rest, None


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
