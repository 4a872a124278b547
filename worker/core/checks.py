"""Computed checks: named rules that look at the artifact's structure, not at a pattern.

A rule with ``check: <name>`` hits where :data:`CHECKS` ``[name]`` says: a signal the
normaliser raised (``zero-width-chars``...), a new executable in a diff, a release that
changes only its manifests, bidi controls outside right-to-left text, an install hook
whose script holds evidence (:mod:`worker.core.hooks`), a secret named first and sent later
(:mod:`worker.core.flows`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from worker.core.diff import Diff
from worker.core.flows import secret_flow
from worker.core.hooks import hook_target_evidence
from worker.core.models import Evidence
from worker.core.normalize import near_rtl

__all__ = ["CHECKS", "SIGNALS", "CheckContext", "CheckFn"]


@dataclass(frozen=True)
class CheckContext:
    """What a computed check may look at: the artifact, its diff, the signals seen so far, and
    (for checks that weigh other rules' hits) a way to scan one section of the artifact again
    on its own, which returns the pattern rules' evidence there."""

    data: bytes
    diff: Diff | None
    signals: dict[str, tuple[int, int]]
    rescan: Callable[[int, int], Mapping[str, Evidence]] | None = None


CheckFn = Callable[[CheckContext], list[tuple[int, int]]]
_EXECUTABLE = (
    ".exe",
    ".dll",
    ".so",
    ".dylib",
    ".scr",
    ".msi",
    ".bin",
    ".pyd",
    ".pyc",
    ".jar",
    ".elf",
    ".com",
    ".bat",
)


def _signal_check(name: str) -> CheckFn:
    def check(context: CheckContext) -> list[tuple[int, int]]:
        return [context.signals[name]] if name in context.signals else []

    return check


def _new_executable(context: CheckContext) -> list[tuple[int, int]]:
    """New binary files with an executable or native-module extension."""
    if context.diff is None:
        return []
    found = [f for f in context.diff.new_binaries if f.path.lower().endswith(_EXECUTABLE)]
    return [(f.start, context.data.find(b"\n", f.start) % (len(context.data) + 1)) for f in found]


def _manifest_only(context: CheckContext) -> list[tuple[int, int]]:
    """The release changes install manifests (and lockfiles) and nothing else."""
    diff = context.diff
    if diff is None or not diff.manifest_only:
        return []
    first = next(f for f in diff.files if f.manifest)
    return [(first.start, first.start + len(first.path))]


# Embedding, override and isolate controls (U+202A-202E, U+2066-2069), UTF-8 encoded: what makes
# code read differently than it runs (Trojan Source). Not the implicit marks LRM/RLM/ALM, which
# localised strings and bundled i18n code carry legitimately.
_BIDI_OVERRIDE = re.compile(rb"\xe2\x80[\xaa-\xae]|\xe2\x81[\xa6-\xa9]")


def _bidi_override(context: CheckContext) -> list[tuple[int, int]]:
    """Bidi embedding/override/isolate controls outside right-to-left text."""
    found = (m.span() for m in _BIDI_OVERRIDE.finditer(context.data))
    return [(s, e) for s, e in found if not near_rtl(context.data, s, e)]


SIGNALS = ("zero-width-chars", "bidi-control", "unicode-tags", "variation-selectors", "homoglyphs")
CHECKS: dict[str, CheckFn] = {name: _signal_check(name) for name in SIGNALS}
CHECKS.update(
    {
        "new-executable-binary": _new_executable,
        "manifest-only-release": _manifest_only,
        "bidi-override": _bidi_override,
        "hook-target-evidence": hook_target_evidence,
        "secret-flow": secret_flow,
    }
)
