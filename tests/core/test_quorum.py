"""The quorum rule: k of n valid votes decide, everything else is review (fail closed)."""

from __future__ import annotations

from worker.core.models import Coverage, ErrorKind, Evidence, PrecheckResult, Span, Vote
from worker.core.quorum import decide_quorum

CLEAN = PrecheckResult(verdict="harmless")
NAMES = ("a", "b", "c")


def vote(name: str, verdict: str | None = None, error: ErrorKind | None = None, scanned: int = 10) -> Vote:
    return Vote(
        detector=name,
        backend="t",
        verdict=verdict,
        error=error,
        coverage=Coverage(total_bytes=10, scanned_bytes=scanned),
    )


def test_precheck_harmful_quarantines_without_votes():
    """Decisive pre-check evidence blocks early, naming the rule."""
    pre = PrecheckResult(
        verdict="harmful", evidence=(Evidence(rule_id="pi.override", span=Span(start=0, end=4)),)
    )
    decision, reason = decide_quorum(pre, [], 2, NAMES)
    assert decision == "quarantine" and "pi.override" in reason


def test_two_harmful_votes_quarantine():
    """Two valid harmful votes of three quarantine."""
    votes = [vote("a", "harmful"), vote("b", "harmful"), vote("c", "harmless")]
    assert decide_quorum(CLEAN, votes, 2, NAMES)[0] == "quarantine"


def test_two_harmless_votes_allow():
    """Two valid harmless votes of three allow, even if the third says harmful."""
    votes = [vote("a", "harmless"), vote("b", "harmless"), vote("c", "harmful")]
    assert decide_quorum(CLEAN, votes, 2, NAMES)[0] == "allow"


def test_invalid_votes_never_count_as_harmless():
    """One harmless vote plus errors, malformed answers or timeouts is review."""
    votes = [vote("a", "harmless"), vote("b", error=ErrorKind.timeout), vote("c", error=ErrorKind.malformed)]
    decision, reason = decide_quorum(CLEAN, votes, 2, NAMES)
    assert decision == "review" and "2 invalid" in reason


def test_partial_coverage_vote_is_invalid():
    """A harmless vote that did not cover the whole artifact does not count."""
    votes = [vote("a", "harmless"), vote("b", "harmless", scanned=9), vote("c", "harmful")]
    assert decide_quorum(CLEAN, votes, 2, NAMES)[0] == "review"


def test_duplicate_votes_from_one_detector_count_once():
    """A redelivered detector vote cannot make up a quorum on its own."""
    votes = [vote("a", "harmless"), vote("a", "harmless"), vote("a", "harmless")]
    decision, reason = decide_quorum(CLEAN, votes, 2, NAMES)
    assert decision == "review" and "2 missing" in reason


def test_votes_from_unknown_detectors_are_ignored():
    """Only detectors named by the policy vote."""
    votes = [vote("a", "harmless"), vote("zz", "harmless")]
    assert decide_quorum(CLEAN, votes, 2, NAMES)[0] == "review"


def test_no_votes_is_review():
    """Missing every vote (lost fan-out) is review, never allow."""
    assert decide_quorum(CLEAN, [], 2, NAMES)[0] == "review"
