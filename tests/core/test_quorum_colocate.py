"""The quorum's colocate option: harmful votes add up only where they point at one passage."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from policies.loader import load_policy
from tests.core.test_quorum_dissent import vote as dissent_vote
from worker.core.models import ErrorKind, PrecheckResult, ScoredWindow, Vote
from worker.core.policy import Quorum
from worker.core.quorum import decide_quorum, most_together

CLEAN = PrecheckResult(verdict="harmless")
NAMES = ("rules", "lexical", "semantic")
SLACK = 512


def at(*places: tuple[int, int] | tuple[int, int, str]) -> tuple[ScoredWindow, ...]:
    return tuple(
        ScoredWindow(view=p[2] if len(p) == 3 else "raw", start=p[0], end=p[1], logit=1.0, score=0.9)
        for p in places
    )


def vote(
    name: str,
    verdict: str | None,
    windows: tuple[ScoredWindow, ...] = (),
    score: float | None = 0.9,
    error: ErrorKind | None = None,
) -> Vote:
    return dissent_vote(name, verdict, score, error, windows)


def decide(votes: list[Vote], colocate: int | None = SLACK, dissent: dict[str, float] | None = None) -> str:
    return decide_quorum(CLEAN, votes, 2, NAMES, dissent, colocate)[0]


def test_votes_at_one_passage_quarantine():
    """Two harmful votes whose windows overlap quarantine, as without the option."""
    votes = [
        vote("rules", "harmless"),
        vote("lexical", "harmful", at((40_960, 41_472), (3_072, 3_584))),
        vote("semantic", "harmful", at((41_344, 41_856))),
    ]
    decision, reason = decide_quorum(CLEAN, votes, 2, NAMES, None, SLACK)
    assert decision == "quarantine"
    assert reason.startswith("quorum harmful (2 harmful, 1 harmless")


def test_votes_at_different_passages_are_read_passage_by_passage():
    """Two harmful votes on paragraphs 30 KB apart: at each passage one harmful vote against two
    harmless ones, so the item is allowed, and the reason says the votes were apart."""
    votes = [
        vote("rules", "harmless"),
        vote("lexical", "harmful", at((25_728, 26_240))),
        vote("semantic", "harmful", at((14_208, 14_720), (25_728 + 4_096, 26_240 + 4_096))),
    ]
    decision, reason = decide_quorum(CLEAN, votes, 2, NAMES, None, SLACK)
    assert decision == "allow"
    assert "1 harmful at one passage, 2 harmless there" in reason
    assert decide(votes, colocate=None) == "quarantine"  # without the option: anywhere adds up


def test_the_rules_evidence_spans_are_places_too():
    """A rules vote points at its evidence: near a model's window it adds up, far from it not."""
    near = [vote("rules", "harmful", at((54_081, 54_104))), vote("lexical", "harmful", at((53_760, 54_272)))]
    far = [vote("rules", "harmful", at((4_535, 4_559))), vote("lexical", "harmful", at((21_888, 22_400)))]
    assert decide([*near, vote("semantic", "harmless")]) == "quarantine"
    assert decide([*far, vote("semantic", "harmless")]) == "allow"


def test_slack_is_bytes_between_places():
    """Places count as one passage up to ``colocate`` bytes apart, not beyond."""
    votes = [vote("lexical", "harmful", at((0, 512))), vote("semantic", "harmful", at((1_000, 1_512)))]
    assert decide([vote("rules", "harmless"), *votes], colocate=488) == "quarantine"
    assert decide([vote("rules", "harmless"), *votes], colocate=487) == "allow"


def test_places_in_other_views_cannot_be_compared_and_count_as_one_passage():
    """A diff's added-lines view and its raw bytes have other offsets: never read as apart."""
    votes = [
        vote("rules", "harmful", at((90_000, 90_020))),
        vote("lexical", "harmful", at((1_920, 2_432, "added"))),
        vote("semantic", "harmless"),
    ]
    assert decide(votes) == "quarantine"


def test_a_window_that_names_its_raw_bytes_is_compared_by_them():
    """A window of an e-mail's decoded part is shown in the part's offsets but names the encoded
    lines that write it (``raw``): the quorum compares those with the rules' spans and the other
    model's windows, far apart or near; without ``raw`` it counts as every passage."""

    def decoded(start: int, end: int, raw: tuple[int, int] | None) -> tuple[ScoredWindow, ...]:
        return (ScoredWindow(view="decoded:0", start=start, end=end, logit=1.0, score=0.9, raw=raw),)

    rules = vote("rules", "harmful", at((60_100, 60_140)))
    far = vote("lexical", "harmful", decoded(2_048, 2_560, (3_000, 3_770)))
    near = vote("lexical", "harmful", decoded(43_000, 43_512, (59_900, 60_670)))
    unplaced = vote("lexical", "harmful", decoded(2_048, 2_560, None))
    assert decide([rules, far, vote("semantic", "harmless")]) == "allow"
    assert decide([rules, near, vote("semantic", "harmless")]) == "quarantine"
    assert decide([rules, unplaced, vote("semantic", "harmless")]) == "quarantine"
    other = vote("semantic", "harmful", decoded(2_300, 2_812, (3_300, 4_070)))
    assert decide([vote("rules", "harmless"), far, other]) == "quarantine"  # two decoded windows, one passage


def test_a_vote_without_places_points_everywhere():
    """An LLM vote names no window: it agrees with any other harmful vote."""
    votes = [vote("rules", "harmless"), vote("lexical", "harmful", at((0, 512))), vote("semantic", "harmful")]
    assert decide(votes) == "quarantine"


def test_apart_votes_with_an_invalid_third_go_to_review():
    """Apart harmful votes beside an invalid one: one harmful and one harmless at the passage,
    no quorum either way, so review, never allow."""
    votes = [
        vote("rules", "harmless", error=ErrorKind.timeout, score=None),
        vote("lexical", "harmful", at((0, 512))),
        vote("semantic", "harmful", at((40_000, 40_512))),
    ]
    assert decide(votes) == "review"


def test_apart_votes_still_dissent():
    """A confident harmful vote outvoted at its passage sends the item to review by ``dissent``."""
    votes = [
        vote("rules", "harmless"),
        vote("lexical", "harmful", at((0, 512)), score=0.9995),
        vote("semantic", "harmful", at((40_000, 40_512))),
    ]
    assert decide(votes, dissent={"lexical": 0.999}) == "review"
    assert decide(votes) == "allow"


def test_three_votes_two_together_quarantine():
    """Of three harmful votes, two at one passage are a quorum of two."""
    votes = [
        vote("rules", "harmful", at((9_635, 9_651))),
        vote("lexical", "harmful", at((9_600, 10_112))),
        vote("semantic", "harmful", at((51_456, 51_968))),
    ]
    assert decide(votes) == "quarantine"


def test_most_together_counts_the_best_passage():
    votes = [
        vote("rules", "harmful", at((100, 120), (9_000, 9_020))),
        vote("lexical", "harmful", at((8_800, 9_312))),
        vote("semantic", "harmful", at((30_000, 30_512))),
    ]
    assert most_together(votes, SLACK) == 2
    assert most_together(votes, 100_000) == 3
    assert most_together([vote("lexical", "harmful"), vote("semantic", "harmful")], 0) == 2


def test_option_is_validated():
    detectors = load_policy("prompt-injection").quorum.detectors
    with pytest.raises(ValidationError):
        Quorum(detectors=detectors, colocate_bytes=-1)
    assert Quorum(detectors=detectors).colocate_bytes is None


def test_shipped_policies():
    """Prompt-injection reads votes passage by passage; malicious-package, whose evidence spans a
    release (a hook in one file runs the payload of another), does not."""
    assert load_policy("prompt-injection").quorum.colocate_bytes == SLACK
    assert load_policy("malicious-package").quorum.colocate_bytes is None


PLACE = st.tuples(st.sampled_from(["raw", "added"]), st.integers(0, 50_000), st.integers(1, 600)).map(
    lambda p: ScoredWindow(view=p[0], start=p[1], end=p[1] + p[2], logit=1.0, score=0.9)
)
VOTE = st.tuples(st.sampled_from(["harmful", "harmless", None]), st.lists(PLACE, max_size=3).map(tuple))


@settings(max_examples=300, deadline=None)
@given(st.lists(VOTE, min_size=3, max_size=3), st.integers(0, 2_000), st.booleans())
def test_reading_by_passage_only_ever_softens_a_quarantine(raw, slack, dissenting):
    """Whatever the votes and places: without a quarantine the option changes nothing; a
    quarantine it softens becomes allow only if every vote is valid, else review; and a slack
    wider than any artifact decides exactly as the plain quorum."""
    votes = [
        vote(name, verdict, places, error=None if verdict else ErrorKind.timeout, score=0.9995)
        for name, (verdict, places) in zip(NAMES, raw, strict=True)
    ]
    dissent = {"lexical": 0.999} if dissenting else None
    plain = decide(votes, colocate=None, dissent=dissent)
    passages = decide(votes, colocate=slack, dissent=dissent)
    assert decide(votes, colocate=10**9, dissent=dissent) == plain
    if plain != "quarantine":
        assert passages == plain
    elif passages == "allow":
        assert all(v.valid for v in votes)
    else:
        assert passages in ("quarantine", "review")
