"""Install hooks inherit the evidence of the file they run (a computed check of the rulesets).

An npm lifecycle script (``"postinstall": "node setup.js"``) or a setup.py ``cmdclass`` is
weak evidence alone: native modules build at install. What makes it an attack is what the
script it runs does, and that script is usually another file of the same release. The check
``hook-target-evidence`` links the two: a hook the diff adds, whose target file in the diff
holds evidence of its own, is evidence where that file's evidence lies.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING

from worker.core.diff import DiffFile

if TYPE_CHECKING:
    from worker.core.checks import CheckContext

__all__ = ["HOOK_TARGET_MIN", "hook_target_evidence"]

HOOK_TARGET_MIN = 0.5  # a hook's target file counts from this summed weight (the rules detector's vote)
_NPM_HOOK = re.compile(
    rb'"(?:preinstall|install|postinstall|prepare|preuninstall|postuninstall)" ?: ?"((?:[^"\\\n]|\\.){1,400})"'
)
_HOOK_TOKEN = re.compile(rb"[^\s\"'`;&|<>()=]+")
_SCRIPT_SUFFIXES = ("", ".js", ".cjs", ".mjs", "/index.js")


def _hook_targets(context: CheckContext) -> Iterator[DiffFile]:
    """Files of the diff that an install hook the diff adds will run: scripts named by an added npm
    lifecycle script (relative to its package.json), and a setup.py that adds a cmdclass."""
    diff = context.diff
    assert diff is not None
    by_path = {f.path: f for f in diff.files}
    for index, file in enumerate(diff.files):
        name = posixpath.basename(file.path)
        if name not in ("package.json", "setup.py"):
            continue
        end = diff.files[index + 1].start if index + 1 < len(diff.files) else len(context.data)
        added = b"\n".join(context.data[s:e] for s, e in diff.added_runs(file.start, end))
        if name == "setup.py":
            if b"cmdclass" in added:
                yield file
            continue
        folder = posixpath.dirname(file.path)
        for command in _NPM_HOOK.finditer(added):
            for token in _HOOK_TOKEN.findall(command.group(1)):
                relative = token.decode("utf-8", "replace")
                if "/" not in relative and "." not in relative:
                    continue  # a command name (node, sh), not a file
                path = posixpath.normpath(posixpath.join(folder, relative))
                found = next((by_path[path + x] for x in _SCRIPT_SUFFIXES if path + x in by_path), None)
                if found is not None:
                    yield found


def hook_target_evidence(context: CheckContext) -> list[tuple[int, int]]:
    """An install hook added by the diff runs a file of the same diff whose added lines hold
    evidence of their own (rules other than the ``*.hook.*`` ones summing to ``HOOK_TARGET_MIN``):
    what that file does, it does at install time. The hit lies on the file's heaviest evidence, so
    both add up within one stretch."""
    diff = context.diff
    if diff is None or context.rescan is None:
        return []
    starts = [f.start for f in diff.files]
    for target in _hook_targets(context):
        index = starts.index(target.start)
        end = starts[index + 1] if index + 1 < len(starts) else len(context.data)
        found = [e for e in context.rescan(target.start, end).values() if ".hook." not in e.rule_id]
        if found and sum(e.weight for e in found) >= HOOK_TARGET_MIN:
            heaviest = max(found, key=lambda e: e.weight)
            return [(heaviest.span.start, heaviest.span.end)]
    return []
