"""The window null: the best window read against how many windows it was the best of."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from worker.core.detector import verdict_output
from worker.detectors.local.scan_statistic import MAX_SLOPE, MIN_SLOPE, WindowNull, expit
from worker.detectors.local.windows import artifact_score, scored_answer

HARMFUL, HARMLESS = verdict_output("harmful"), verdict_output("harmless")


@pytest.fixture(scope="module")
def null() -> WindowNull:
    # Harmless windows whose logits are standard logistic: P(logit >= x) = 1 / (1 + e^x).
    rng = np.random.default_rng(0)
    return WindowNull.fit(rng.logistic(size=50_000))


def test_one_window_reads_the_window_tail(null: WindowNull) -> None:
    """For one window the scan statistic is that window's own tail probability."""
    for x in (-2.0, 0.0, 2.0, 5.0):
        tail = 1.0 / (1.0 + math.exp(x))
        p = 1.0 - expit(null.artifact_logit(x, 1))
        assert p == pytest.approx(tail, rel=0.08)


@pytest.mark.parametrize("tail", [0.5, 0.05, 0.01, 1e-6])
def test_the_logit_at_a_tail_inverts_the_window_tail(null: WindowNull, tail: float) -> None:
    """Inside the knots and on the exponential beyond them, the logit a share of harmless windows
    reaches is the one whose tail is that share (a second ranker's floor)."""
    logit = null.logit_at_tail(tail)
    assert null.log_window_tail(logit) == pytest.approx(math.log(tail), abs=0.02)
    if tail >= 0.01:  # inside the fitted knots: the logistic's own quantile, 1 / (1 + e^x) = tail
        assert logit == pytest.approx(math.log(1 / tail - 1), abs=0.1)


def test_the_logit_at_a_tail_takes_only_a_share(null: WindowNull) -> None:
    assert null.logit_at_tail(1.0) == pytest.approx(float(null.knots[0]))
    for bad in (0.0, -0.1, 1.5):
        with pytest.raises(ValueError, match="share of windows"):
            null.logit_at_tail(bad)


def test_the_same_best_window_counts_for_less_in_a_longer_artifact(null: WindowNull) -> None:
    """The same best window scores strictly lower the more windows it was the best of."""
    scores = [null.artifact_logit(3.0, n) for n in (1, 10, 100, 1_000, 100_000)]
    assert scores == sorted(scores, reverse=True)
    assert len(set(scores)) == len(scores)


def test_many_harmless_windows_do_not_add_up_to_harmful(null: WindowNull) -> None:
    # The best of n harmless windows: its scan statistic stays spread out whatever n is, where the
    # raw maximum climbs to certainty (the reason for the null).
    """The best of many harmless windows stays middling where the raw maximum reads certain."""
    rng = np.random.default_rng(1)
    for n in (10, 1_000, 20_000):
        bests = np.array([rng.logistic(size=n).max() for _ in range(200)])
        raw = 1.0 / (1.0 + np.exp(-bests))
        read = np.array([expit(null.artifact_logit(float(b), n)) for b in bests])
        assert 0.35 < float(np.median(read)) < 0.65
        if n >= 1_000:
            assert float(np.median(raw)) > 0.99


def test_a_strong_window_stays_decisive_in_a_huge_artifact(null: WindowNull) -> None:
    # Beyond every harmless window seen, the tail is extrapolated, not flat: 25 logits is far past
    # the null's top (about 11) and still reads as near-certain among 10**6 windows.
    """A window far past every harmless one stays near-certain among a million windows."""
    assert null.knots[-1] < 15.0
    assert expit(null.artifact_logit(25.0, 1_000_000)) > 0.99
    assert null.artifact_logit(25.0, 1_000_000) < null.artifact_logit(30.0, 1_000_000)


def test_below_every_harmless_window_scores_zero(null: WindowNull) -> None:
    """A best window below every harmless window seen scores zero."""
    assert expit(null.artifact_logit(float(null.knots[0]) - 1.0, 5)) == 0.0


@given(
    best=st.floats(min_value=-30, max_value=60, allow_nan=False),
    windows=st.integers(min_value=1, max_value=10**7),
)
def test_scan_statistic_is_finite_ordered_and_monotone(best: float, windows: int) -> None:
    """The statistic is never NaN, rises with the best logit and falls with the window count."""
    null = WindowNull(
        knots=np.array([-3.0, 0.0, 2.0, 4.0]), log_tail=np.log([1.0, 0.5, 0.1, 0.01]), slope=1.0
    )
    here = null.artifact_logit(best, windows)
    assert not math.isnan(here)
    assert here <= null.artifact_logit(best + 0.5, windows)
    assert here >= null.artifact_logit(best, windows + 1)


def test_fitted_slope_is_bounded() -> None:
    """The fitted tail slope is clamped to [MIN_SLOPE, MAX_SLOPE]."""
    flat = WindowNull.fit(np.concatenate([np.zeros(990), np.linspace(0.0, 1000.0, 10)]))
    steep = WindowNull.fit(np.concatenate([np.zeros(990), np.linspace(0.0, 0.001, 10)]))
    assert flat.slope == MIN_SLOPE
    assert steep.slope == MAX_SLOPE


def test_archive_round_trip(null: WindowNull, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A null saved to .npz loads back with the same answers; an archive without one loads None."""
    path = tmp_path / "model.npz"
    np.savez_compressed(path, **null.arrays())
    with np.load(path) as archive:
        loaded = WindowNull.from_archive(archive)
    assert loaded is not None
    assert loaded.artifact_logit(4.0, 40) == pytest.approx(null.artifact_logit(4.0, 40), rel=1e-5)
    assert loaded.reference_windows == null.reference_windows
    np.savez_compressed(path, other=np.zeros(1))
    with np.load(path) as archive:
        assert WindowNull.from_archive(archive) is None


@dataclass(frozen=True)
class FixedModel:
    """Every window gets the same logit, except windows containing ``hot`` get ``hot_logit``."""

    null: WindowNull | None
    window: int = 64
    overlap: int = 16
    threshold: float = 0.5
    logit: float = 2.5
    hot: str = "HOT"
    hot_logit: float = 9.0

    def logits(self, windows: list[str]) -> np.ndarray:
        return np.array([self.hot_logit if self.hot in w else self.logit for w in windows])


def test_detectors_answer_by_the_scan_statistic(null: WindowNull) -> None:
    """With a null, length matters: a mild window blocks a short artifact only; a strong one anywhere."""
    short = b"x" * 100
    long = b"x" * 100_000
    planted = long[:50_000] + b"HOT" + long[50_000:]
    plain = FixedModel(null=None)
    scan = FixedModel(null=null)
    # Without a null the best window decides alone: length changes nothing.
    assert scored_answer(short, plain, 0.5).output == scored_answer(long, plain, 0.5).output
    # With it, a mildly high window is harmful in a short artifact but not among 2,000 like it ...
    assert scored_answer(short, scan, 0.5).output == HARMFUL
    assert scored_answer(long, scan, 0.5).output == HARMLESS
    # ... and one strong window deep in the long artifact is still found, with full coverage.
    answer = scored_answer(planted, scan, 0.5)
    assert answer.output == HARMFUL
    assert answer.coverage.scanned_bytes == answer.coverage.total_bytes == len(planted)


def test_no_windows_score_zero(null: WindowNull) -> None:
    """An artifact with no windows scores zero."""
    assert artifact_score(FixedModel(null=null), np.empty(0)) == 0.0


def test_artifacts_up_to_the_reference_length_count_as_one_window() -> None:
    """Up to reference_windows windows score as one window would."""
    rng = np.random.default_rng(2)
    logits = rng.logistic(size=5_000)
    plain, referenced = WindowNull.fit(logits), WindowNull.fit(logits, reference_windows=10.0)
    for windows in (1, 5, 10):
        assert referenced.artifact_logit(3.0, windows) == plain.artifact_logit(3.0, 1)
    assert referenced.artifact_logit(3.0, 100) == pytest.approx(plain.artifact_logit(3.0, 10))
    assert referenced.artifact_logit(3.0, 11) < referenced.artifact_logit(3.0, 10)
    assert WindowNull.fit(logits, reference_windows=0.0).reference_windows == 1.0


class RecordingModel:
    """Random logits (``hot_logit`` for windows containing "HOT"); remembers how many windows each
    call scored, and each logit it gave."""

    window, overlap, threshold, hot, hot_logit = 64, 16, 0.5, "HOT", 9.0

    def __init__(self, null: WindowNull | None) -> None:
        self.null = null
        self.calls: list[int] = []
        self.given: list[float] = []

    def logits(self, windows: list[str]) -> np.ndarray:
        self.calls.append(len(windows))
        out = np.random.default_rng(len(self.given)).logistic(size=len(windows))
        out[[i for i, w in enumerate(windows) if self.hot in w]] = self.hot_logit
        self.given += out.tolist()
        return out


@pytest.mark.parametrize("with_null", [False, True])
def test_a_large_artifact_is_scored_in_bounded_batches(
    null: WindowNull, with_null: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Windows are scored in batches of at most BATCH_BYTES, each once, with the all-at-once score."""
    # A vote's memory stays flat, where a 20 MB diff once took 2.8 GB; the score is the best logit
    # among all windows, read against their count.
    from worker.detectors.local import windows as _windows

    monkeypatch.setattr(_windows, "BATCH_BYTES", 64 * 10)  # 10 windows of 64 bytes per call
    data = b"y" * 30_000 + b"HOT" + b"y" * 30_000
    model = RecordingModel(null if with_null else None)
    answer = scored_answer(data, model, 0.5)
    spans = _windows.window_spans(len(data), model.window, model.overlap)
    assert max(model.calls) == 10 and len(model.calls) > 90
    assert sum(model.calls) == len(spans) == len(model.given)
    expected = artifact_score(model, np.asarray(model.given))
    assert answer.score == expected and answer.output == HARMFUL
    assert answer.coverage.scanned_bytes == answer.coverage.total_bytes == len(data)
