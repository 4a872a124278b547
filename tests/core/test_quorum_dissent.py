"""The quorum's dissent option: a confident harmful minority sends an item to review."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from policies.loader import load_policy
from worker.core.models import Coverage, ErrorKind, PrecheckResult, ScoredWindow, Vote
from worker.core.policy import Quorum
from worker.core.quorum import decide_quorum

CLEAN = PrecheckResult(verdict="harmless")
NAMES = ("rules", "lexical", "semantic")


def vote(
    name: str,
    verdict: str | None,
    score: float | None = None,
    error: ErrorKind | None = None,
    windows: tuple[ScoredWindow, ...] = (),
) -> Vote:
    return Vote(
        detector=name,
        backend=name,
        verdict=verdict,
        error=error,
        score=score,
        windows=windows,
        coverage=Coverage(total_bytes=10, scanned_bytes=10),
    )


def split(score: float | None) -> list[Vote]:
    return [
        vote("rules", "harmless", 0.1),
        vote("lexical", "harmful", score),
        vote("semantic", "harmless", 0.2),
    ]


def test_confident_minority_sends_to_review():
    """A harmful vote at or above its dissent score turns an allow into review, and says why."""
    decision, reason = decide_quorum(CLEAN, split(0.995), 2, NAMES, {"lexical": 0.99})
    assert decision == "review"
    assert reason.startswith("dissent: lexical harmful at 0.995")


def test_minority_below_its_score_is_outvoted():
    """A harmful vote below its detector's dissent score is outvoted as before."""
    assert decide_quorum(CLEAN, split(0.9), 2, NAMES, {"lexical": 0.99})[0] == "allow"


def test_only_named_detectors_dissent():
    """A confident harmful vote of a detector the option does not name is outvoted."""
    assert decide_quorum(CLEAN, split(0.999), 2, NAMES, {"rules": 0.8})[0] == "allow"


def test_without_the_option_split_votes_allow():
    """No dissent option: two harmless votes allow whatever the third's score."""
    assert decide_quorum(CLEAN, split(1.0), 2, NAMES)[0] == "allow"


def test_vote_without_score_never_dissents():
    """A harmful vote that carries no score (an LLM's strict answer) cannot dissent."""
    assert decide_quorum(CLEAN, split(None), 2, NAMES, {"lexical": 0.5})[0] == "allow"


def test_invalid_vote_never_dissents():
    """An errored vote with a high score is not a harmful vote and does not dissent."""
    votes = split(0.1)[:1] + [vote("lexical", None, 0.999, ErrorKind.timeout), vote("semantic", "harmless")]
    decision, reason = decide_quorum(CLEAN, votes, 2, NAMES, {"lexical": 0.5})
    assert decision == "allow" and "1 invalid" in reason


def test_dissent_does_not_soften_a_quarantine():
    """Two harmful votes still quarantine whatever the dissent option says."""
    votes = [vote("rules", "harmful", 0.6), vote("lexical", "harmful", 0.999), vote("semantic", "harmless")]
    assert decide_quorum(CLEAN, votes, 2, NAMES, {"lexical": 0.99})[0] == "quarantine"


def test_a_redelivered_vote_cannot_dissent_in_place_of_the_counted_one():
    """Only the vote that counted for a detector is read, not a later duplicate."""
    votes = split(0.5) + [vote("lexical", "harmful", 0.999)]
    assert decide_quorum(CLEAN, votes, 2, NAMES, {"lexical": 0.99})[0] == "allow"


def detectors(*kinds: str) -> list[dict[str, str]]:
    return [{"name": kind, "kind": kind} for kind in kinds]


def test_policy_dissent_must_name_a_quorum_detector():
    """A dissent entry for a detector the quorum lacks is refused at load."""
    with pytest.raises(ValidationError, match="not a detector of the quorum"):
        Quorum(detectors=detectors("rules", "lexical"), dissent={"semantic": 0.9})


def test_policy_dissent_refuses_detectors_without_scores():
    """An LLM detector answers only the strict protocol, so it cannot be given a dissent score."""
    with pytest.raises(ValidationError, match="records no score"):
        Quorum(detectors=detectors("rules", "openai"), required=1, dissent={"openai": 0.9})


def test_policy_dissent_accepts_local_detectors():
    """Local detectors may each have their own dissent score."""
    quorum = Quorum(
        detectors=detectors("rules", "lexical", "semantic"), dissent={"rules": 0.8, "lexical": 0.99}
    )
    assert quorum.dissent == {"rules": 0.8, "lexical": 0.99}


def test_shipped_malicious_package_policy_reviews_a_confident_lexical_minority():
    """Under the shipped malicious-package policy a lexical vote at 0.995 outvoted goes to review,
    a semantic one does not."""
    package = load_policy("malicious-package")
    names = [d.name for d in package.quorum.detectors]
    assert decide_quorum(CLEAN, split(0.995), 2, names, package.quorum.dissent)[0] == "review"
    semantic = [vote("rules", "harmless"), vote("lexical", "harmless"), vote("semantic", "harmful", 0.999)]
    assert decide_quorum(CLEAN, semantic, 2, names, package.quorum.dissent)[0] == "allow"


def test_shipped_prompt_injection_policy_reviews_only_a_very_confident_minority():
    """Under the shipped prompt-injection policy an outvoted lexical vote goes to review at 0.9995,
    not at 0.995; an outvoted semantic vote (the reader's) at 0.99999, not at 0.9999."""
    injection = load_policy("prompt-injection")
    names = [d.name for d in injection.quorum.detectors]
    assert decide_quorum(CLEAN, split(0.9995), 2, names, injection.quorum.dissent)[0] == "review"
    assert decide_quorum(CLEAN, split(0.995), 2, names, injection.quorum.dissent)[0] == "allow"
    for score, decision in ((0.99999, "review"), (0.9999, "allow")):
        semantic = [
            vote("rules", "harmless"),
            vote("lexical", "harmless"),
            vote("semantic", "harmful", score),
        ]
        assert decide_quorum(CLEAN, semantic, 2, names, injection.quorum.dissent)[0] == decision
