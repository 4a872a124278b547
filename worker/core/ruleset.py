"""Rules as data: the ruleset schema, the named computed checks, compiled matchers.

A ruleset is one YAML file in ``policies/rules/`` (see :mod:`worker.core.precheck`
for what the fields mean to the engine). :func:`load_ruleset` validates it and
compiles every pattern ONCE per file content into two matchers, one for flat text
and one for ``lines`` rules: a single Hyperscan database each when Hyperscan is
importable, else one combined Python regex (same answers, slower).

Hyperscan says which rules match and where each first match ends; the rule's
Python regex then reads the match from :data:`MAX_MATCH` bytes before that end,
so both engines report the same spans. Rules with a post-filter (``min_entropy``,
``unquoted``, ``unless``, ``not_after``, ``not_before``) try their first matches in order
until one passes, the others take their first.
"""

from __future__ import annotations

import math
import re
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import chain, islice
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from policies.loader import RULES_DIR, ruleset_content
from policies.schema import HarmPolicy
from worker.core.diff import Diff
from worker.core.errors import ConfigError
from worker.core.hooks import hook_target_evidence
from worker.core.literals import hyperscan, scan
from worker.core.models import Evidence
from worker.core.normalize import near_rtl

__all__ = [
    "CHECKS",
    "MAX_MATCH",
    "RULES_DIR",
    "CheckContext",
    "CompiledRuleset",
    "Hit",
    "Matcher",
    "Rule",
    "Ruleset",
]
__all__ += ["compile_ruleset", "engine_name", "load_ruleset", "policy_rulesets"]

MAX_MATCH = 1 << 12  # no rule match is longer than this; windows overlap by as much
Engine = Literal["auto", "hyperscan", "re"]


# --- rules as data -----------------------------------------------------------------


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


# --- matching ----------------------------------------------------------------------

Hit = tuple[Rule, int, int]
_CANDIDATES = 64  # filtered rules (min_entropy) try at most this many matches per layer
# A pattern that is one character class repeated exactly N times ("[A-Za-z0-9+/=]{240}").
_RUN_PATTERN = re.compile(rb"(\[(?:[^\]\\\[]|\\.)+\])\{([1-9][0-9]*)\}")


class Matcher:
    """All pattern rules of one scope group, compiled once; ``scan`` yields first hits per rule."""

    def __init__(self, rules: Sequence[Rule], engine: Engine = "auto") -> None:
        self.rules = tuple(rules)
        self.engine = "hyperscan" if engine != "re" and hyperscan is not None and self.rules else "re"
        if engine == "hyperscan" and hyperscan is None:
            raise ConfigError("hyperscan is not installed")
        self.regexes = [re.compile((r.pattern or "").encode(), _re_flags(r)) for r in self.rules]
        self._runs = {i: run for i, r in enumerate(self.rules) if (run := _run_of(r)) is not None}
        self._db = self._hyperscan_db() if self.engine == "hyperscan" else None
        self._local = threading.local()

    def _hyperscan_db(self) -> Any:
        db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
        flags = [
            hyperscan.HS_FLAG_MULTILINE
            | (0 if r.case_sensitive else hyperscan.HS_FLAG_CASELESS)
            | hyperscan.HS_FLAG_SINGLEMATCH
            for r in self.rules
        ]
        patterns = [(r.pattern or "").encode() for r in self.rules]
        try:
            db.compile(
                expressions=patterns, ids=list(range(len(patterns))), elements=len(patterns), flags=flags
            )
        except hyperscan.error as exc:
            for rule, pattern, flag in zip(self.rules, patterns, flags, strict=True):
                try:
                    hyperscan.Database().compile(expressions=[pattern], ids=[0], elements=1, flags=[flag])
                except hyperscan.error as inner:
                    raise ConfigError(
                        f"rule {rule.id}: hyperscan cannot compile its pattern: {inner}"
                    ) from exc
            raise ConfigError(f"hyperscan cannot compile the ruleset: {exc}") from exc
        return db

    def scan(
        self, data: bytes, lines: bytes | None = None, wanted: Callable[[Rule], bool] | None = None
    ) -> Iterator[Hit]:
        """First hit per rule in ``data``; ``lines`` is the same text with its newlines, for filters.

        ``wanted`` (asked lazily, once per rule that matched) skips rules whose
        hit the caller would discard, before their match start is searched.
        """
        if not self.rules or not data:
            return
        context = data if lines is None else lines
        if self._db is None:
            yield from self._scan_re(data, context, wanted)
            return
        first_end: dict[int, int] = {}

        def collect(rule_id: int, _from: int, to: int, _flags: int, _ctx: object) -> None:
            first_end.setdefault(rule_id, to)

        scan(self._db, self._local, data, collect)
        for index, end in first_end.items():
            if wanted is None or wanted(self.rules[index]):
                # No match is longer than MAX_MATCH, so none starts before end - MAX_MATCH: from
                # there re finds the same matches, in the same order, as from the start.
                yield from self._first_passing(index, data, context, max(0, end - MAX_MATCH))

    def _scan_re(self, data: bytes, context: bytes, wanted: Callable[[Rule], bool] | None) -> Iterator[Hit]:
        """Fallback: one combined regex of the rules not hit yet, restarted after each hit.

        Restarting at the hit's start (without the rule just found) yields the
        leftmost match of every rule in (hits + 1) passes.
        """
        keep = wanted or (lambda _rule: True)
        plain = frozenset(i for i, r in enumerate(self.rules) if not r.filtered)
        position = 0
        while plain:
            match = self._combined(plain).search(data, position)
            if match is None:
                break
            index = int((match.lastgroup or "r0")[1:])
            yield self.rules[index], match.start(), match.end()
            plain, position = plain - {index}, match.start()
        for index, rule in enumerate(self.rules):
            if rule.filtered and keep(rule):
                yield from self._first_passing(index, data, context, 0)

    def _first_passing(self, index: int, data: bytes, context: bytes, start: int) -> Iterator[Hit]:
        """The rule's first match from ``start`` that passes its post-filters (of its first few)."""
        rule = self.rules[index]
        for match_start, match_end in islice(
            self._matches(index, data, start), _CANDIDATES if rule.filtered else 1
        ):
            if _passes(rule, context, match_start, match_end):
                yield rule, match_start, match_end
                return

    def _matches(self, index: int, data: bytes, start: int) -> Iterator[tuple[int, int]]:
        """The spans ``finditer`` would give from ``start``. A class repeated N times is found
        through its runs of at least N instead (non-overlapping N-byte pieces from each run's
        start): ``re`` would try every offset of every shorter run, quadratic in code full of
        long identifiers (it was 40 % of the pre-check on real diffs)."""
        run = self._runs.get(index)
        if run is None:
            for match in self.regexes[index].finditer(data, start):
                yield match.span()
            return
        run_here, long_runs, length = run
        here = run_here.match(data, start)  # the run ``start`` falls inside, maybe empty
        assert here is not None  # a class repeated zero or more times always matches
        for run_start, run_end in chain(
            [here.span()], (m.span() for m in long_runs.finditer(data, here.end()))
        ):
            while run_end - run_start >= length:
                yield run_start, run_start + length
                run_start += length

    @lru_cache(maxsize=256)  # noqa: B019 - matchers live as long as their cached ruleset
    def _combined(self, indices: frozenset[int]) -> re.Pattern[bytes]:
        parts = [b"(?P<r%d>%s)" % (i, self._scoped(i)) for i in sorted(indices)]
        return re.compile(b"|".join(parts), re.MULTILINE)

    def _scoped(self, index: int) -> bytes:
        flags = "" if self.rules[index].case_sensitive else "i"
        pattern = (self.rules[index].pattern or "").encode()
        return b"(?%s:%s)" % (flags.encode(), pattern) if flags else b"(?:%s)" % pattern


def _run_of(rule: Rule) -> tuple[re.Pattern[bytes], re.Pattern[bytes], int] | None:
    """For a pattern that is one character class repeated exactly N times: the class repeated
    from a given start, the runs of at least N that start a run, and N."""
    found = _RUN_PATTERN.fullmatch((rule.pattern or "").encode())
    if found is None:
        return None
    members, length = found.group(1), int(found.group(2))
    flags = _re_flags(rule)
    return (
        re.compile(members + b"*", flags),
        re.compile(b"(?<!%s)%s{%d,}" % (members, members, length), flags),
        length,
    )


def _re_flags(rule: Rule) -> re.RegexFlag:
    return re.MULTILINE if rule.case_sensitive else re.MULTILINE | re.IGNORECASE


@lru_cache(maxsize=256)
def _veto(pattern: str) -> re.Pattern[bytes]:
    return re.compile(pattern.encode(), re.IGNORECASE)


CONTEXT_BYTES = 64  # how far before a match ``not_after`` looks, and after it ``not_before``


@lru_cache(maxsize=256)
def _veto_at_end(pattern: str) -> re.Pattern[bytes]:
    """``pattern`` anchored at the end of the text it searches (the text before a match)."""
    return re.compile(b"(?:%s)\\Z" % pattern.encode(), re.IGNORECASE)


_SENTENCE_END = re.compile(rb"[.!?][\"')]*[ \n]")  # a closing quote may follow the stop


def _inside_quotes(data: bytes, start: int) -> bool:
    """Whether an open quote precedes ``start`` in its sentence (quotes may span wrapped lines)."""
    window = data[max(0, start - 400) : start]
    ends = [m.end() for m in _SENTENCE_END.finditer(window)]
    sentence = window[ends[-1] :] if ends else window
    return bool(
        sentence.count(b'"') % 2 or sentence.count(b"`") % 2 or sentence.rstrip(b" ").endswith((b"'", b"("))
    )


def _passes(rule: Rule, data: bytes, start: int, end: int) -> bool:
    """Post-filters: ``unless`` (veto regex on the match), ``not_after`` / ``not_before`` (veto
    regexes on the text just before / after it), ``unquoted`` (not inside quotes), ``min_entropy``."""
    if rule.unless is not None and _veto(rule.unless).search(data[start:end]):  # ^ = start of the match
        return False
    if rule.not_after is not None and _veto_at_end(rule.not_after).search(
        data[max(0, start - CONTEXT_BYTES) : start]
    ):
        return False
    if rule.not_before is not None and _veto(rule.not_before).match(data, end, end + CONTEXT_BYTES):
        return False
    if rule.unquoted and _inside_quotes(data, start):
        return False
    if rule.min_entropy is None:
        return True
    matched = data[start:end]
    counts = [matched.count(bytes([b])) for b in set(matched)]
    bits = -sum(c / len(matched) * math.log2(c / len(matched)) for c in counts) if matched else 0.0
    return bits >= rule.min_entropy


# --- computed checks ---------------------------------------------------------------


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
    }
)


# --- compiled rulesets ---------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class CompiledRuleset:
    """A ruleset compiled once: a matcher for flat text, one for ``lines`` rules, the checks."""

    ruleset: Ruleset
    flat: Matcher
    lines: Matcher
    checks: tuple[Rule, ...]


def compile_ruleset(ruleset: Ruleset, engine: Engine = "auto") -> CompiledRuleset:
    """Compile every pattern of ``ruleset`` (two databases: flat and line-aware)."""
    patterns = [r for r in ruleset.rules if r.pattern is not None]
    return CompiledRuleset(
        ruleset=ruleset,
        flat=Matcher([r for r in patterns if not r.lines], engine),
        lines=Matcher([r for r in patterns if r.lines], engine),
        checks=tuple(r for r in ruleset.rules if r.check is not None),
    )


def engine_name() -> str:
    """The regex engine rule matching uses in this process: ``hyperscan`` or ``re``."""
    return "re" if hyperscan is None else "hyperscan"


def load_ruleset(name: str, engine: Engine = "auto", sha256: str | None = None) -> CompiledRuleset:
    """Validate and compile ``policies/rules/<name>.yaml`` as it is on disk now.

    The file is looked at on every call (a ``stat``; read again only when it changed) and
    compiled once per content, so an edited rule file takes effect without a restart.
    ``sha256`` is the digest the caller's policy was fingerprinted with: a file changed since
    then raises ``ConfigError``, so rules a gate's recorded fingerprint does not cover never
    judge it.
    """
    try:
        content = ruleset_content(name)
    except OSError as exc:
        raise ConfigError(f"unknown ruleset {name!r}: {exc}") from exc
    if sha256 is not None and content.sha256 != sha256:
        raise ConfigError(f"ruleset {name!r} changed since its policy was loaded")
    key = (name, content.sha256, engine)
    compiled = _COMPILED.get(key)
    if compiled is None:
        with _COMPILE_LOCK:
            compiled = _COMPILED.get(key) or _compile_file(name, content.raw, engine)
            _COMPILED[key] = compiled
            while len(_COMPILED) > 16:  # old contents of edited files
                del _COMPILED[next(iter(_COMPILED))]
    return compiled


def policy_rulesets(policy: HarmPolicy, names: Sequence[str]) -> list[CompiledRuleset]:
    """The compiled rulesets ``names`` exactly as ``policy`` was fingerprinted with them."""
    return [load_ruleset(name, sha256=policy.ruleset_sha256(name)) for name in names]


_COMPILED: dict[tuple[str, str, Engine], CompiledRuleset] = {}
_COMPILE_LOCK = threading.Lock()


def _compile_file(name: str, raw: bytes, engine: Engine) -> CompiledRuleset:
    try:
        return compile_ruleset(Ruleset.model_validate(yaml.safe_load(raw)), engine)
    except (yaml.YAMLError, ValidationError, re.error) as exc:
        raise ConfigError(f"ruleset {name}.yaml is invalid: {exc}") from exc
