"""The strict answer protocol: exactly {"verdict": "harmful"|"harmless"}, anything else is invalid."""

from __future__ import annotations

import pickle

import pytest

from worker.core.detector import cast_vote, error_vote, parse_verdict, verdict_output
from worker.core.errors import DetectorCompromisedError, DetectorError, DetectorTimeoutError
from worker.core.models import Answer, Coverage, ErrorKind
from worker.core.policy import Protocol

P = Protocol()


@pytest.mark.parametrize("verdict", ["harmful", "harmless"])
def test_canonical_answers_parse(verdict):
    """The canonical output round-trips to its verdict."""
    assert parse_verdict(verdict_output(verdict), P) == verdict


@pytest.mark.parametrize(
    "output",
    [
        "harmless",
        '{"verdict": "benign"}',
        '{"verdict": "harmless", "reason": "fine"}',
        '```json\n{"verdict": "harmless"}\n```',
        'Sure! {"verdict": "harmless"}',
        '[{"verdict": "harmless"}]',
        '{"Verdict": "harmless"}',
        '{"verdict": ["harmless"]}',
        "",
    ],
)
def test_off_protocol_answers_are_rejected(output):
    """Prose, code fences, extra keys or other values are not a verdict."""
    assert parse_verdict(output, P) is None


def test_cast_vote_marks_malformed_answers_invalid():
    """A malformed answer becomes an invalid vote with error kind malformed."""
    answer = Answer(output="I think it is harmless", coverage=Coverage.full(5))
    vote = cast_vote("d", "static", answer, P, 1.0)
    assert not vote.valid and vote.error is ErrorKind.malformed and vote.verdict is None


def test_cast_vote_marks_partial_coverage_invalid():
    """A well-formed answer that covered less than everything is invalid."""
    answer = Answer(output=verdict_output("harmless"), coverage=Coverage(total_bytes=10, scanned_bytes=4))
    vote = cast_vote("d", "static", answer, P, 1.0)
    assert not vote.valid and vote.error is ErrorKind.partial_coverage


def test_error_vote_is_invalid_and_keeps_its_kind():
    """A failed detector's vote is invalid and says why."""
    vote = error_vote("d", "x", ErrorKind.timeout, "too slow", 5.0, 10)
    assert not vote.valid and vote.error is ErrorKind.timeout


@pytest.mark.parametrize(
    "exc", [DetectorError("boom"), DetectorTimeoutError("slow"), DetectorCompromisedError("leak")]
)
def test_detector_errors_survive_pickling(exc):
    """Celery pickles exceptions: kind and message survive the round trip."""
    back = pickle.loads(pickle.dumps(exc))
    assert type(back) is type(exc) and back.kind == exc.kind and back.message == exc.message
