"""The quorum's dissent option: a confident harmful minority sends an item to review."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from policies.loader import load_policy
from worker.core.models import Coverage, ErrorKind, PrecheckResult, ScoredWindow, Vote
from worker.core.policy import Quorum, SecondedDissent, ShortDissent
from worker.core.quorum import decide_quorum

CLEAN = PrecheckResult(verdict="harmless")
NAMES = ("rules", "lexical", "semantic")


def vote(
    name: str,
    verdict: str | None,
    score: float | None = None,
    error: ErrorKind | None = None,
    windows: tuple[ScoredWindow, ...] = (),
    size: int = 10,
) -> Vote:
    return Vote(
        detector=name,
        backend=name,
        verdict=verdict,
        error=error,
        score=score,
        windows=windows,
        coverage=Coverage(total_bytes=size, scanned_bytes=size),
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


def lone_semantic(score: float, size: int) -> list[Vote]:
    return [
        vote("rules", "harmless", size=size),
        vote("lexical", "harmless", size=size),
        vote("semantic", "harmful", score, size=size),
    ]


SHORT = (ShortDissent(up_to_bytes=1000, scores={"semantic": 0.999}),)


def test_a_short_text_has_a_lower_dissent_bar():
    """Up to ``up_to_bytes`` the short score applies to the detectors it names: a lone semantic vote
    at 0.9995 on 1,000 bytes goes to review, the same vote on 1,001 bytes is outvoted (the long
    bar, 0.99998, applies), and says which bar it met."""
    dissent = {"semantic": 0.99998}
    decision, reason = decide_quorum(CLEAN, lone_semantic(0.9995, 1000), 2, NAMES, dissent, None, SHORT)
    assert decision == "review" and "texts up to 1000 bytes" in reason
    assert decide_quorum(CLEAN, lone_semantic(0.9995, 1001), 2, NAMES, dissent, None, SHORT)[0] == "allow"
    assert decide_quorum(CLEAN, lone_semantic(0.99999, 1001), 2, NAMES, dissent, None, SHORT)[0] == "review"
    assert decide_quorum(CLEAN, lone_semantic(0.99, 1000), 2, NAMES, dissent, None, SHORT)[0] == "allow"


def test_a_detector_the_short_scores_do_not_name_keeps_its_dissent():
    """The short scores replace only the scores of the detectors they name: a lexical vote on a
    short text needs the lexical dissent score, and with none it never dissents."""
    assert decide_quorum(CLEAN, split(0.9995), 2, NAMES, {"lexical": 0.999}, None, SHORT)[0] == "review"
    assert decide_quorum(CLEAN, split(0.9995), 2, NAMES, {}, None, SHORT)[0] == "allow"


def test_policy_short_dissent_is_checked_as_dissent_is():
    """A short dissent score for a detector the quorum lacks, or one that records no score, is refused."""
    with pytest.raises(ValidationError, match=r"quorum.dissent_short names 'semantic'"):
        Quorum(detectors=detectors("rules", "lexical"), dissent_short=SHORT)
    with pytest.raises(ValidationError, match="records no score"):
        Quorum(
            detectors=detectors("rules", "openai"),
            required=1,
            dissent_short=ShortDissent(up_to_bytes=10, scores={"openai": 0.9}),
        )


def test_shipped_prompt_injection_policy_reviews_only_a_very_confident_minority():
    """Under the shipped prompt-injection policy an outvoted lexical vote goes to review at 0.9995,
    not at 0.995; an outvoted semantic vote (the reader's) on a text over 16 KB at 0.99999, not at
    0.9999, and on a text of up to 16 KB from 0.999."""
    injection = load_policy("prompt-injection")
    quorum = injection.quorum
    names = [d.name for d in quorum.detectors]
    assert decide_quorum(CLEAN, split(0.9995), 2, names, quorum.dissent)[0] == "review"
    assert decide_quorum(CLEAN, split(0.995), 2, names, quorum.dissent)[0] == "allow"
    for score, size, decision in (
        (0.99999, 16385, "review"),
        (0.9999, 16385, "allow"),
        (0.9995, 16384, "review"),
        (0.998, 16384, "allow"),
    ):
        votes = lone_semantic(score, size)
        got = decide_quorum(CLEAN, votes, 2, names, quorum.dissent, None, quorum.dissent_short)[0]
        assert got == decision, (score, size)


TIERS = (
    ShortDissent(up_to_bytes=1000, scores={"semantic": 0.999}),
    ShortDissent(up_to_bytes=8000, scores={"semantic": 0.9999, "lexical": 0.99}),
)


def test_the_shortest_tier_that_holds_the_text_and_names_the_detector_applies():
    """Tiers are read shortest first: a semantic vote on 1,000 bytes takes the first tier's bar, on
    1,001 the second's, beyond 8,000 the general dissent; a lexical vote on 1,000 bytes skips the
    first tier, which does not name it, and takes the second's; the reason names the tier."""
    dissent = {"semantic": 0.99998}
    decision, reason = decide_quorum(CLEAN, lone_semantic(0.9995, 1000), 2, NAMES, dissent, None, TIERS)
    assert decision == "review" and "texts up to 1000 bytes" in reason
    assert decide_quorum(CLEAN, lone_semantic(0.9995, 1001), 2, NAMES, dissent, None, TIERS)[0] == "allow"
    decision, reason = decide_quorum(CLEAN, lone_semantic(0.99995, 8000), 2, NAMES, dissent, None, TIERS)
    assert decision == "review" and "texts up to 8000 bytes" in reason
    assert decide_quorum(CLEAN, lone_semantic(0.99995, 8001), 2, NAMES, dissent, None, TIERS)[0] == "allow"
    assert decide_quorum(CLEAN, lone_semantic(0.99999, 8001), 2, NAMES, dissent, None, TIERS)[0] == "review"
    lexical = [
        vote("rules", "harmless", 0.1, size=1000),
        vote("lexical", "harmful", 0.995, size=1000),
        vote("semantic", "harmless", 0.2, size=1000),
    ]
    decision, reason = decide_quorum(CLEAN, lexical, 2, NAMES, {"lexical": 0.999}, None, TIERS)
    assert decision == "review" and "lexical harmful at 0.995 >= 0.99 (texts up to 8000 bytes)" in reason


def test_policy_tiers_read_one_mapping_as_one_tier_and_must_go_up_in_length():
    """A policy may write one tier as a mapping (as before tiers) or a list of them; the lengths of a
    list must rise, each once, or the policy is refused."""
    one = Quorum(
        detectors=detectors("rules", "lexical", "semantic"),
        dissent_short={"up_to_bytes": 16384, "scores": {"semantic": 0.999}},
    )
    assert one.dissent_short == (ShortDissent(up_to_bytes=16384, scores={"semantic": 0.999}),)
    assert Quorum(detectors=detectors("rules", "semantic"), dissent_short=None).dissent_short == ()
    for lengths in ((8000, 1000), (1000, 1000)):
        with pytest.raises(ValidationError, match="tiers go from the shortest"):
            Quorum(
                detectors=detectors("rules", "semantic"),
                dissent_short=[{"up_to_bytes": n, "scores": {"semantic": 0.999}} for n in lengths],
            )


def test_the_gate_decides_with_the_policy_short_dissent():
    """The gate's decide step (``judge``) hands the policy's short scores to the quorum: a lone
    reader vote at 0.9995 sends a 16 KB text to review and is outvoted on one byte more."""
    from datetime import timedelta

    from worker.adapters.db.tables import Gate, utcnow
    from worker.pipeline.steps import Pending, judge

    policy = load_policy("prompt-injection")

    class Resolver:
        def resolve(self, ref: str, sha256: str) -> object:
            return policy

    for size, decision in ((16384, "review"), (16385, "allow")):
        gate = Gate(
            sha256="0" * 64,
            object_key="sha256/00/0",
            size=size,
            policy_ref=policy.id,
            policy_id=policy.id,
            policy_version=policy.version,
            policy_sha256=policy.sha256,
            deadline=utcnow() + timedelta(minutes=5),
        )
        report = judge(gate, Pending(CLEAN, lone_semantic(0.9995, size)), Resolver())  # type: ignore[arg-type]
        assert report.decision == decision, size


def window(start: int, score: float, view: str = "raw") -> ScoredWindow:
    return ScoredWindow(view=view, start=start, end=start + 512, logit=0.0, score=score)


SECONDED = SecondedDissent(scores={"semantic": 0.999}, seconds={"lexical": 0.95}, up_to_bytes=1 << 20)


def lone_reader(lexical_at: int, lexical_score: float, size: int = 65_536, view: str = "raw") -> list[Vote]:
    """The reader alone harmful on the window at 40,960; the lexical model's best window elsewhere."""
    return [
        vote("rules", "harmless", 0.0, size=size),
        vote(
            "lexical",
            "harmless",
            lexical_score,
            windows=(window(lexical_at, lexical_score, view),),
            size=size,
        ),
        vote("semantic", "harmful", 0.9995, windows=(window(40_960, 0.9995),), size=size),
    ]


def seconded(votes: list[Vote], rule: SecondedDissent | None = SECONDED) -> tuple[str, str]:
    return decide_quorum(CLEAN, votes, 2, NAMES, {}, 512, dissent_seconded=rule)


def test_a_lone_vote_seconded_on_its_passage_goes_to_review():
    """Two detectors point at one passage though only one crossed its cut: review, not allow."""
    decision, reason = seconded(lone_reader(lexical_at=40_960 + 384, lexical_score=0.97))
    assert decision == "review"
    assert "semantic harmful at 0.9995 >= 0.999, seconded by lexical at 0.97 >= 0.95" in reason


@pytest.mark.parametrize(
    ("lexical_at", "lexical_score", "view"),
    [
        (40_960 + 384, 0.90, "raw"),  # the second is under its bar
        (20_480, 0.99, "raw"),  # the second points at another passage of the document
        (40_960, 0.99, "added"),  # a place in another view cannot be compared
    ],
    ids=["second-too-weak", "elsewhere", "another-view"],
)
def test_a_lone_vote_without_a_second_on_its_passage_is_outvoted(lexical_at, lexical_score, view):
    assert seconded(lone_reader(lexical_at, lexical_score, view=view))[0] == "allow"


def test_the_seconded_dissent_holds_only_for_texts_up_to_its_length_and_when_set():
    votes = lone_reader(lexical_at=40_960, lexical_score=0.99, size=2 << 20)
    assert seconded(votes)[0] == "allow"
    assert seconded(lone_reader(lexical_at=40_960, lexical_score=0.99), None)[0] == "allow"
    weak = lone_reader(lexical_at=40_960, lexical_score=0.99)
    weak[2] = vote("semantic", "harmful", 0.99, windows=(window(40_960, 0.99),), size=65_536)
    assert seconded(weak)[0] == "allow"


def test_seconded_dissent_names_scored_detectors_of_the_quorum():
    base = load_policy("prompt-injection").quorum.model_dump()
    with pytest.raises(ValidationError, match="dissent_seconded.seconds names 'llm'"):
        Quorum.model_validate(
            {**base, "dissent_seconded": {"scores": {"semantic": 0.999}, "seconds": {"llm": 0.5}}}
        )
