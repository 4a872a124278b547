"""Quorum: k of n valid votes decide; everything else goes to a human. Fail closed."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from worker.core.models import Decision, PrecheckResult, Vote


def decide_quorum(
    precheck: PrecheckResult,
    votes: Sequence[Vote],
    required: int,
    expected: Sequence[str] = (),
    dissent: Mapping[str, float] | None = None,
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
    the strict protocol) never dissents.
    """
    if precheck.verdict == "harmful":
        rules = sorted({e.rule_id for e in precheck.evidence})
        return "quarantine", "pre-check: " + (", ".join(rules[:5]) or "harmful")
    allowed = set(expected)
    seen: set[str] = set()
    harmful = harmless = invalid = 0
    for vote in votes:
        if vote.detector in seen or (allowed and vote.detector not in allowed):
            continue
        seen.add(vote.detector)
        if not vote.valid:
            invalid += 1
        elif vote.verdict == "harmful":
            harmful += 1
        else:
            harmless += 1
    missing = len(allowed - seen)
    tally = f"{harmful} harmful, {harmless} harmless, {invalid} invalid, {missing} missing"
    if harmful >= required:
        return "quarantine", f"quorum harmful ({tally}; need {required})"
    if harmless >= required:
        dissenter = _dissenter(votes, seen, dissent or {})
        if dissenter is not None:
            return "review", f"dissent: {dissenter} lost the quorum ({tally}; need {required})"
        return "allow", f"quorum harmless ({tally}; need {required})"
    return "review", f"no quorum ({tally}; need {required})"


def _dissenter(votes: Sequence[Vote], counted: set[str], dissent: Mapping[str, float]) -> str | None:
    """``name harmful at score >= min`` for the first counted harmful vote confident enough."""
    done: set[str] = set()
    for vote in votes:
        if vote.detector in done or vote.detector not in counted:
            continue
        done.add(vote.detector)
        least = dissent.get(vote.detector)
        if least is None or not vote.valid or vote.verdict != "harmful" or vote.score is None:
            continue
        if vote.score >= least:
            return f"{vote.detector} harmful at {vote.score:.4g} >= {least:g}"
    return None
