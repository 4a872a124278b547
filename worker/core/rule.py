"""Rules as data: the schema of a rule and of a ruleset (one YAML file in ``policies/rules/``).

See :mod:`worker.core.precheck` for what the fields mean to the engine; a rule is a regex
``pattern`` or the name of a computed ``check`` (:mod:`worker.core.checks`).
"""

from __future__ import annotations

import importlib
import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from worker.core.checks import CHECKS

__all__ = ["Rule", "Ruleset"]


class Rule(BaseModel):
    """One rule of a ruleset: a regex or a named computed check, and what a hit weighs."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9.-]*$")
    description: str
    weight: float = Field(gt=0)
    pattern: str | None = None
    check: str | None = None
    scope: Literal["any", "text", "added", "decoded"] = "any"
    files: tuple[str, ...] = ()
    case_sensitive: bool = False
    min_entropy: float | None = Field(default=None, gt=0, le=8)
    unquoted: bool = False
    unless: str | None = None
    not_after: str | None = None
    not_before: str | None = None
    lines: bool = False
    # Bytes: the hit adds up with other rules' hits only within this many bytes of it (a property of
    # one element, such as hidden markup, is not one passage with an element kilobytes away).
    near: int | None = Field(default=None, ge=64)

    @property
    def starts_line(self) -> bool:
        """Whether a flat rule's pattern may match at ``^`` (a sentence's start, as its author
        wrote it), which the flat text, one line, has only where it begins; see
        :attr:`worker.core.offsets.Layer.starts`."""
        return self.pattern is not None and not self.lines and _has_start(_PARSER.parse(self.pattern).data)

    @property
    def placed(self) -> bool:
        """Whether the rule reads only some places of a diff (the files it names, its added
        lines), so a match elsewhere is not its hit."""
        return bool(self.files) or self.scope == "added"

    @property
    def filtered(self) -> bool:
        """Whether a match must pass a post-filter (so every candidate is examined)."""
        vetoes = (self.unless, self.not_after, self.not_before)
        return self.min_entropy is not None or self.unquoted or any(v is not None for v in vetoes)

    @model_validator(mode="after")
    def _one_kind(self) -> Rule:
        if (self.pattern is None) == (self.check is None):
            raise ValueError(f"rule {self.id}: give exactly one of pattern or check")
        if self.check is not None and self.check not in CHECKS:
            raise ValueError(f"rule {self.id}: unknown check {self.check!r}; known: {sorted(CHECKS)}")
        if self.pattern is not None and not self.lines and _needs_newline(self.pattern):
            raise ValueError(
                f"rule {self.id}: its pattern needs a line break, which flat text never has"
                " (newlines read as spaces); set lines: true"
            )
        for name, veto in (
            ("unless", self.unless),
            ("not_after", self.not_after),
            ("not_before", self.not_before),
        ):
            if veto is not None:
                try:
                    re.compile(veto)
                except re.error as exc:
                    raise ValueError(f"rule {self.id}: its {name} regex is invalid: {exc}") from exc
        return self


_LINE_BREAKS = re.compile(r"\\[nr]|[\n\r]")


_PARSER: Any = importlib.import_module("re._parser")  # what ``re`` compiles with (``sre_parse``)
_C: Any = importlib.import_module("re._constants")


_STARTS = (_C.AT_BEGINNING, _C.AT_BEGINNING_LINE)


def _has_start(items: Any) -> bool:
    """Whether a parsed pattern holds ``^`` anywhere (in a group, a branch, a repeat), but for a
    ``^`` that is the alternative of a whitespace class (``(?:^|[\\s;(])``): that one means the
    text's start, and a line's start already matches the class, on a newline or a space."""
    for op, arg in items:
        if op is _C.AT and arg in _STARTS:
            return True
        if op is _C.BRANCH:
            branches = arg[1]
            spaced = any(len(b) == 1 and _spaces(b[0]) for b in branches)
            if any(_has_start(b) for b in branches if not (spaced and _only_start(b))):
                return True
        if op is _C.SUBPATTERN and _has_start(arg[-1]):
            return True
        if op in (_C.MAX_REPEAT, _C.MIN_REPEAT, _C.POSSESSIVE_REPEAT) and _has_start(arg[2]):
            return True
        if op is _C.ATOMIC_GROUP and _has_start(arg):
            return True
    return False


def _only_start(items: Any) -> bool:
    """Whether a parsed branch is a lone ``^``."""
    return len(items) == 1 and items[0][0] is _C.AT and items[0][1] in _STARTS


def _spaces(item: tuple[Any, Any]) -> bool:
    """Whether a parsed item is a character class (not negated) that holds ``\\s``."""
    op, arg = item
    return op is _C.IN and (_C.CATEGORY, _C.CATEGORY_SPACE) in arg and (_C.NEGATE, None) not in arg


def _needs_newline(pattern: str) -> bool:
    """Whether ``pattern`` needs a line break: a ``\\n`` or ``\\r`` outside a character class, or a
    class of line breaks only (``[\\r\\n]``); a class with other members has alternatives."""
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if char == "\\":
            if pattern[i + 1 : i + 2] in ("n", "r"):
                return True
            i += 2
        elif char in "\n\r":
            return True
        elif char == "[":
            end = _class_end(pattern, i)
            members = pattern[i + 1 : end]
            if members and not members.startswith("^") and not _LINE_BREAKS.sub("", members):
                return True
            i = end + 1
        else:
            i += 1
    return False


def _class_end(pattern: str, start: int) -> int:
    """The index of the ``]`` closing the character class opened at ``start``."""
    i = start + 1
    if pattern[i : i + 1] == "^":
        i += 1
    if pattern[i : i + 1] == "]":  # a leading ] is a member
        i += 1
    while i < len(pattern) and pattern[i] != "]":
        i += 2 if pattern[i] == "\\" else 1
    return i


class Ruleset(BaseModel):
    """A versioned list of rules (one YAML file in ``policies/rules/``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    version: str
    rules: tuple[Rule, ...]

    @model_validator(mode="after")
    def _unique(self) -> Ruleset:
        ids = [r.id for r in self.rules]
        if len(set(ids)) != len(ids):
            raise ValueError(f"ruleset {self.id}: rule ids must be unique")
        return self
