"""Quorum: k of n valid votes decide; everything else goes to a human. Fail closed.

With ``colocate`` (bytes), harmful votes add up only where they point at one passage. A local vote
names where it looked: a model's best windows (a harmful vote only those over its cut), the rules'
evidence spans (view and byte offsets, :class:`worker.core.models.ScoredWindow`). In a long harmless
document each detector's rare false alarm falls on its own paragraph, while an injection is one
passage that every detector that sees it points at: on dev injections planted in 64 KB carriers, the
shipped gate blocked 8 of 140 carriers alone, with the detectors' windows apart in 7 of them, and
its votes on the attacks were apart in 6 of 180 (``benchmarks/planted.py``, 2026-11-29). A model
names a window of a diff's added lines or its prose, or of a JSON document's fields, by its raw
bytes (:func:`worker.core.views.raw_span`, :func:`worker.core.prose.prose_raw_spans`), so it
compares with the rules' spans; a window of an e-mail's decoded text part names the encoded lines
that write it (``ScoredWindow.raw``). Places in different views (a decoded part whose lines cannot
be told against the raw bytes) cannot be compared and count as one passage; so does a harmful
vote that names no place (an LLM judges the whole artifact): an option that can only turn
quarantines into allows never guesses.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from worker.core.models import Decision, PrecheckResult, ScoredWindow, Vote
from worker.core.policy import SecondedDissent, ShortDissent

RAW = "raw"  # the artifact's bytes as stored (worker.core.views.RAW)


def decide_quorum(
    precheck: PrecheckResult,
    votes: Sequence[Vote],
    required: int,
    expected: Sequence[str] = (),
    dissent: Mapping[str, float] | None = None,
    colocate: int | None = None,
    dissent_short: Sequence[ShortDissent] = (),
    dissent_seconded: SecondedDissent | None = None,
) -> tuple[Decision, str]:
    """Apply the gate's decision rule.

    - pre-check harmful -> quarantine
    - at least ``required`` valid harmful votes -> quarantine
    - at least ``required`` valid harmless votes -> allow
    - anything else (ties, invalid votes, missing detectors) -> review

    A vote counts only once per detector name and only if it names a detector
    in ``expected`` (when given): duplicates or strangers never add up to a
    quorum. Invalid votes (error, malformed, partial coverage) never count as
    harmless.

    ``dissent`` (detector name -> score): a valid harmful vote of a named detector
    whose score reaches its value turns an ``allow`` into ``review`` (a confident
    minority is not overruled). A vote without a score (LLM detectors answer only
    the strict protocol) never dissents. ``dissent_short`` gives other scores for a vote on a
    text of at most ``up_to_bytes`` (its coverage's total): of its tiers (shortest first), the
    first that holds the text and names the detector.

    ``dissent_seconded``: a harmful vote that loses the quorum also goes to review where another
    detector names a place beside one of its own at that detector's ``seconds`` score
    (:class:`worker.core.policy.SecondedDissent`), within ``colocate`` bytes (0 without it).

    ``colocate`` (bytes): the harmful votes count together only if they point at one passage,
    places no more than that many bytes apart (see the module docstring). Harmful votes that
    point at different passages are read passage by passage: at the most-flagged passage the
    other valid votes are harmless ones, so with enough of those the item is allowed (and may
    still be sent to review by ``dissent``); invalid and missing votes count as before.
    """
    if precheck.verdict == "harmful":
        rules = sorted({e.rule_id for e in precheck.evidence})
        return "quarantine", "pre-check: " + (", ".join(rules[:5]) or "harmful")
    allowed = set(expected)
    seen: set[str] = set()
    harmful = harmless = invalid = 0
    flagged: list[Vote] = []
    for vote in votes:
        if vote.detector in seen or (allowed and vote.detector not in allowed):
            continue
        seen.add(vote.detector)
        if not vote.valid:
            invalid += 1
        elif vote.verdict == "harmful":
            harmful += 1
            flagged.append(vote)
        else:
            harmless += 1
    missing = len(allowed - seen)
    tally = f"{harmful} harmful, {harmless} harmless, {invalid} invalid, {missing} missing"
    if harmful >= required and colocate is not None:
        together = most_together(flagged, colocate)
        if together < required:
            # the harmful votes point at different passages: at the most-flagged one the others
            # are harmless votes
            harmless += harmful - together
            harmful = together
            tally = (
                f"{harmful} harmful at one passage, {harmless} harmless there, {invalid} invalid, "
                f"{missing} missing"
            )
    if harmful >= required:
        return "quarantine", f"quorum harmful ({tally}; need {required})"
    if harmless >= required:
        dissenter = _dissenter(votes, seen, dissent or {}, dissent_short)
        if dissenter is None and dissent_seconded is not None:
            dissenter = _seconded(votes, seen, dissent_seconded, colocate or 0)
        if dissenter is not None:
            return "review", f"dissent: {dissenter} lost the quorum ({tally}; need {required})"
        return "allow", f"quorum harmless ({tally}; need {required})"
    return "review", f"no quorum ({tally}; need {required})"


def _dissenter(
    votes: Sequence[Vote], counted: set[str], dissent: Mapping[str, float], short: Sequence[ShortDissent] = ()
) -> str | None:
    """``name harmful at score >= min`` for the first counted harmful vote confident enough."""
    for vote in _first_votes(votes, counted).values():
        if not vote.valid or vote.verdict != "harmful" or vote.score is None or vote.coverage is None:
            continue
        tier = next(
            (t for t in short if vote.coverage.total_bytes <= t.up_to_bytes and vote.detector in t.scores),
            None,
        )
        least = tier.scores[vote.detector] if tier is not None else dissent.get(vote.detector)
        if least is None or vote.score < least:
            continue
        bar = f"{least:g} (texts up to {tier.up_to_bytes} bytes)" if tier is not None else f"{least:g}"
        return f"{vote.detector} harmful at {vote.score:.4g} >= {bar}"
    return None


def _first_votes(votes: Sequence[Vote], counted: set[str]) -> dict[str, Vote]:
    """Each counted detector's first vote, in order: the one the tally read (a later duplicate is
    not counted, valid or not)."""
    first: dict[str, Vote] = {}
    for vote in votes:
        if vote.detector in counted:
            first.setdefault(vote.detector, vote)
    return first


def _seconded(votes: Sequence[Vote], counted: set[str], rule: SecondedDissent, slack: int) -> str | None:
    """``name harmful at score, seconded by other at score`` for the first counted harmful vote
    of ``rule.scores`` that names a place another counted vote names at its ``rule.seconds``."""
    first = {name: vote for name, vote in _first_votes(votes, counted).items() if vote.valid}
    for name, vote in first.items():
        least = rule.scores.get(name)
        if least is None or vote.verdict != "harmful" or vote.score is None or vote.score < least:
            continue
        if rule.up_to_bytes is not None and (
            vote.coverage is None or vote.coverage.total_bytes > rule.up_to_bytes
        ):
            continue
        places = [_place(w) for w in vote.windows if w.score >= least]
        for other, seconder in first.items():
            bar = rule.seconds.get(other)
            if other == name or bar is None:
                continue
            for window in seconder.windows:
                view, span = _place(window)
                if window.score >= bar and any(view == v and near(span, s, slack) for v, s in places):
                    return (
                        f"{name} harmful at {vote.score:.4g} >= {least:g}, seconded by {other} at"
                        f" {window.score:.4g} >= {bar:g} on the same passage"
                    )
    return None


def most_together(votes: Sequence[Vote], slack: int) -> int:
    """The most ``votes`` that point at one passage: places within ``slack`` bytes of one of the
    places they name. A vote that names no place points everywhere."""
    places = [[_place(w) for w in vote.windows] for vote in votes]
    anchors = [place for named in places for place in named]
    if not anchors:
        return len(votes)
    return max(
        sum(
            not named or any(view != at[0] or near(span, at[1], slack) for view, span in named)
            for named in places
        )
        for at in anchors
    )


def _place(window: ScoredWindow) -> tuple[str, tuple[int, int]]:
    """Where ``window`` lies: its raw bytes where it names them, else its view and offsets."""
    if window.raw is not None:
        return RAW, window.raw
    return window.view, (window.start, window.end)


def near(a: tuple[int, int], b: tuple[int, int], slack: int) -> bool:
    """Whether the byte spans ``a`` and ``b`` overlap or lie at most ``slack`` bytes apart."""
    return a[0] <= b[1] + slack and b[0] <= a[1] + slack
