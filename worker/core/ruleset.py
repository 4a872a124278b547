"""Compiled rulesets: a ruleset's patterns compiled once per content, with its checks.

A ruleset is one YAML file in ``policies/rules/``, read and parsed by :mod:`policies.loader`,
which hands it here as a :class:`~worker.core.policy.RulesetSource`. :func:`compile_source`
validates it (:mod:`worker.core.rule`) and compiles every pattern ONCE per file content (its
sha256) into two matchers (:mod:`worker.core.matcher`), one for flat text and one for
``lines`` rules; its computed checks come from :mod:`worker.core.checks`. This module also
re-exports the names of those three, the vocabulary of the pre-check.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass

from pydantic import ValidationError

from worker.core.checks import CHECKS, SIGNALS, CheckContext, CheckFn
from worker.core.errors import ConfigError
from worker.core.literals import hyperscan
from worker.core.matcher import CONTEXT_BYTES, MAX_MATCH, Engine, Hit, Matcher
from worker.core.policy import HarmPolicy, RulesetSource
from worker.core.rule import Rule, Ruleset

__all__ = [
    "CHECKS",
    "CONTEXT_BYTES",
    "MAX_MATCH",
    "SIGNALS",
    "CheckContext",
    "CheckFn",
    "CompiledRuleset",
    "Engine",
    "Hit",
    "Matcher",
    "Rule",
    "Ruleset",
]
__all__ += ["compile_ruleset", "compile_source", "engine_name", "policy_rulesets"]


@dataclass(frozen=True, eq=False)
class CompiledRuleset:
    """A ruleset compiled once: matchers for flat text and for ``lines`` rules, the checks.

    Each matcher holds the rules of one scope, so that a layer is scanned only with the rules that
    read it: under malicious-package two rules of 87 read a diff's whole text, the rest its added
    lines, and one database of all 87 scanned the text for hits that were all but discarded.
    """

    ruleset: Ruleset
    flat: tuple[Matcher, ...]
    lines: tuple[Matcher, ...]
    # the flat rules with a ``^``, which also read the text whose lines that start with a capital
    # letter stay lines (:attr:`worker.core.offsets.Layer.starts`)
    starts: tuple[Matcher, ...]
    checks: tuple[Rule, ...]
    near: dict[str, int]  # rule id -> its ``near`` (bytes), for the rules that have one

    @property
    def scopes(self) -> frozenset[str]:
        """The scopes of its pattern rules: the layers it reads."""
        return frozenset(scope for matcher in (*self.flat, *self.lines) for scope in matcher.scopes)


def compile_ruleset(ruleset: Ruleset, engine: Engine = "auto") -> CompiledRuleset:
    """Compile every pattern of ``ruleset``: one database per scope, flat and line-aware."""
    patterns = [r for r in ruleset.rules if r.pattern is not None]
    return CompiledRuleset(
        ruleset=ruleset,
        flat=_by_scope([r for r in patterns if not r.lines], engine),
        lines=_by_scope([r for r in patterns if r.lines], engine),
        starts=_by_scope([r for r in patterns if r.starts_line], engine),
        checks=tuple(r for r in ruleset.rules if r.check is not None),
        near={r.id: r.near for r in ruleset.rules if r.near is not None},
    )


def _by_scope(rules: Sequence[Rule], engine: Engine) -> tuple[Matcher, ...]:
    """One matcher per scope of ``rules`` (in the order the scopes first appear), rules in order."""
    scopes = dict.fromkeys(r.scope for r in rules)
    return tuple(Matcher([r for r in rules if r.scope == scope], engine) for scope in scopes)


def engine_name() -> str:
    """The regex engine rule matching uses in this process: ``hyperscan`` or ``re``."""
    return "re" if hyperscan is None else "hyperscan"


def compile_source(source: RulesetSource, engine: Engine = "auto") -> CompiledRuleset:
    """Validate and compile a rule file as the loader read it, once per content (its sha256)
    and engine: an edited rule file is a new source, compiled anew; an unchanged one is not."""
    key = (source.sha256, engine)
    compiled = _COMPILED.get(key)
    if compiled is None:
        with _COMPILE_LOCK:
            compiled = _COMPILED.get(key) or _compile(source, engine)
            _COMPILED[key] = compiled
            while len(_COMPILED) > 16:  # old contents of edited files
                del _COMPILED[next(iter(_COMPILED))]
    return compiled


def policy_rulesets(policy: HarmPolicy, names: Sequence[str]) -> list[CompiledRuleset]:
    """The compiled rulesets ``names`` exactly as ``policy`` was loaded (and fingerprinted) with
    them; a name the policy was not loaded with is a ``ConfigError``."""
    compiled = []
    for name in names:
        source = policy.ruleset_source(name)
        if source is None:
            raise ConfigError(f"policy {policy.id!r} was not loaded with ruleset {name!r}")
        compiled.append(compile_source(source))
    return compiled


_COMPILED: dict[tuple[str, Engine], CompiledRuleset] = {}
_COMPILE_LOCK = threading.Lock()


def _compile(source: RulesetSource, engine: Engine) -> CompiledRuleset:
    try:
        return compile_ruleset(Ruleset.model_validate(source.document), engine)
    except (ValidationError, re.error) as exc:
        raise ConfigError(f"ruleset {source.name}.yaml is invalid: {exc}") from exc
