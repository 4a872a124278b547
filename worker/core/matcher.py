"""Compiled matchers: all pattern rules of one scope group, and the post-filters of a match.

A :class:`Matcher` is a single Hyperscan database when Hyperscan is importable, else one
combined Python regex (same answers, slower). Hyperscan says which rules match and where each
first match ends; the rule's Python regex then reads the match from the pattern's longest match
(at most :data:`MAX_MATCH` bytes) before that end, so both engines report the same spans. Rules
with a post-filter (``unquoted``, ``unless``, ``not_after``, ``not_before``) try their matches in
order until one passes, those with ``min_entropy`` their first :data:`_CANDIDATES`; the others take
their first. A rule that reads only some places of a diff passes over its matches elsewhere.
"""

from __future__ import annotations

import importlib
import math
import re
import threading
from collections.abc import Callable, Iterator, Sequence
from functools import lru_cache
from itertools import chain
from typing import Any, Literal

from worker.core.compiled import compiled_database, database_key
from worker.core.errors import ConfigError
from worker.core.literals import hyperscan, scan
from worker.core.rule import Rule

__all__ = ["CONTEXT_BYTES", "MAX_MATCH", "Engine", "Hit", "Matcher"]

MAX_MATCH = 1 << 12  # no rule match is longer than this; windows overlap by as much
Engine = Literal["auto", "hyperscan", "re"]

Hit = tuple[Rule, int, int]
# Whether a rule's match at [start, end) of the scanned data lies where the rule reads (a file its
# ``files`` name, a line the diff adds): the caller knows the layer's place in the artifact.
Placed = Callable[[Rule, int, int], bool]
# Rules with ``min_entropy`` try at most this many matches per layer (each costs a count of the match's
# bytes). A veto costs a regex on at most a few hundred bytes: vetoed rules try every match, so that
# copies the veto rejects (a quoted phrase, an Authorization header) cannot push the real one past a cap.
_CANDIDATES = 64
# A pattern that is one character class repeated exactly N times ("[A-Za-z0-9+/=]{240}").
_RUN_PATTERN = re.compile(rb"(\[(?:[^\]\\\[]|\\.)+\])\{([1-9][0-9]*)\}")
_PARSER: Any = importlib.import_module("re._parser")  # what ``re`` compiles with (``sre_parse``)


class Matcher:
    """All pattern rules of one scope group, compiled once; ``scan`` yields first hits per rule."""

    def __init__(self, rules: Sequence[Rule], engine: Engine = "auto") -> None:
        self.rules = tuple(rules)
        self.engine = "hyperscan" if engine != "re" and hyperscan is not None and self.rules else "re"
        if engine == "hyperscan" and hyperscan is None:
            raise ConfigError("hyperscan is not installed")
        self.regexes = _Regexes(self.rules)
        self.scopes = frozenset(r.scope for r in self.rules)
        self._reach: dict[int, int] = {}
        if self.engine == "re":
            self.regexes.compile_all()
        self._runs = {i: run for i, r in enumerate(self.rules) if (run := _run_of(r)) is not None}
        self._db = self._hyperscan_db() if self.engine == "hyperscan" else None
        self._local = threading.local()

    def _hyperscan_db(self) -> Any:
        flags = [
            hyperscan.HS_FLAG_MULTILINE
            | (0 if r.case_sensitive else hyperscan.HS_FLAG_CASELESS)
            | hyperscan.HS_FLAG_SINGLEMATCH
            for r in self.rules
        ]
        patterns = [(r.pattern or "").encode() for r in self.rules]
        version = str(getattr(hyperscan, "__version__", ""))
        key = database_key(version, hyperscan.HS_MODE_BLOCK, patterns, flags)
        return compiled_database(key, hyperscan.HS_MODE_BLOCK, lambda: self._compile(patterns, flags))

    def _compile(self, patterns: list[bytes], flags: list[int]) -> Any:
        self.regexes.compile_all()  # a pattern ``re`` refuses is refused here, before it is cached
        db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
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
        self,
        data: bytes,
        lines: bytes | None = None,
        wanted: Callable[[Rule], bool] | None = None,
        placed: Placed | None = None,
    ) -> Iterator[Hit]:
        """First hit per rule in ``data``; ``lines`` is the same text with its newlines, for filters.

        ``wanted`` (asked lazily, once per rule that matched) skips rules whose
        hit the caller would discard, before their match start is searched. ``placed`` says
        whether a match of a rule that reads only some places (:attr:`Rule.placed`) lies in one:
        such a rule's first match elsewhere (the same code quoted in a README ahead of the file
        it runs in) does not hide its first match where it reads.
        """
        if not self.rules or not data:
            return
        context = data if lines is None else lines
        if self._db is None:
            yield from self._scan_re(data, context, wanted, placed)
            return
        first_end: dict[int, int] = {}

        def collect(rule_id: int, _from: int, to: int, _flags: int, _ctx: object) -> None:
            first_end.setdefault(rule_id, to)

        scan(self._db, self._local, data, collect)
        for index, end in first_end.items():
            if wanted is None or wanted(self.rules[index]):
                yield from self._first_passing(index, data, context, self._search_from(index, end), placed)

    def _scan_re(
        self, data: bytes, context: bytes, wanted: Callable[[Rule], bool] | None, placed: Placed | None = None
    ) -> Iterator[Hit]:
        """Fallback: one combined regex of the rules not hit yet, restarted after each hit.

        Restarting at the hit's start (without the rule just found) yields the
        leftmost match of every rule in (hits + 1) passes. Rules with a post-filter, and with
        ``placed`` the rules that read only some places, are searched one by one instead.
        """
        keep = wanted or (lambda _rule: True)

        def one_by_one(rule: Rule) -> bool:
            return rule.filtered or (placed is not None and rule.placed)

        plain = frozenset(i for i, r in enumerate(self.rules) if not one_by_one(r))
        position = 0
        while plain:
            match = self._combined(plain).search(data, position)
            if match is None:
                break
            index = int((match.lastgroup or "r0")[1:])
            yield self.rules[index], match.start(), match.end()
            plain, position = plain - {index}, match.start()
        for index, rule in enumerate(self.rules):
            if one_by_one(rule) and keep(rule):
                yield from self._first_passing(index, data, context, 0, placed)

    def _search_from(self, index: int, end: int) -> int:
        """Where ``re`` starts looking for the rule's matches, given where Hyperscan says its first
        match ends: the pattern's longest match (at most MAX_MATCH) before that end.

        Every match ends at or after ``end`` and is no longer than that reach, so none starts
        before: from there ``re`` finds the same matches, in the same order, as from the start.
        Most rules match a few dozen bytes at most; each hit cost a search of MAX_MATCH bytes.
        """
        reach = self._reach.get(index)
        if reach is None:
            reach = self._reach[index] = _longest_match(self.rules[index])
        return max(0, end - reach)

    def _first_passing(
        self, index: int, data: bytes, context: bytes, start: int, placed: Placed | None = None
    ) -> Iterator[Hit]:
        """The rule's first match from ``start`` that passes its post-filters, of the matches that
        lie where it reads (every match elsewhere is passed over, a cheap test); a rule with
        ``min_entropy`` tries the first :data:`_CANDIDATES` of them."""
        rule = self.rules[index]
        where = placed if placed is not None and rule.placed else None
        cap = 1 if not rule.filtered else _CANDIDATES if rule.min_entropy is not None else None
        tried = 0
        for match_start, match_end in self._matches(index, data, start):
            if where is not None and not where(rule, match_start, match_end):
                continue
            if _passes(rule, context, match_start, match_end):
                yield rule, match_start, match_end
                return
            tried += 1
            if cap is not None and tried >= cap:
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


class _Regexes:
    """Each rule's ``re`` pattern, compiled when first asked for. With Hyperscan, ``re`` only
    locates the start of a rule that matched: compiling all of them up front was 0.4 CPU-s of
    every process's start (the database comes from the compiled cache; these did not)."""

    def __init__(self, rules: Sequence[Rule]) -> None:
        self._rules = rules
        self._compiled: dict[int, re.Pattern[bytes]] = {}

    def __len__(self) -> int:
        return len(self._rules)

    def __getitem__(self, index: int) -> re.Pattern[bytes]:
        found = self._compiled.get(index)
        if found is None:
            rule = self._rules[index]
            found = self._compiled[index] = re.compile((rule.pattern or "").encode(), _re_flags(rule))
        return found

    def compile_all(self) -> None:
        for index in range(len(self._rules)):
            self[index]


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


def _longest_match(rule: Rule) -> int:
    """The longest match of the rule's pattern, capped at MAX_MATCH (MAX_MATCH if unknown)."""
    try:
        longest = int(_PARSER.parse((rule.pattern or "").encode(), _re_flags(rule)).getwidth()[1])
    except Exception:  # noqa: BLE001 - a parser that changed shape: the safe, slow reach
        return MAX_MATCH
    return min(MAX_MATCH, longest)


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
