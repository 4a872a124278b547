"""Read a windowed model's best window against the number of windows it was the best of.

A local model scores every window of an artifact and the best window decides.
That maximum grows with the number of windows even when every window is
harmless: a model that flags 3 % of harmless windows flags about two thirds of
the harmless artifacts 37 windows long, and nearly every release of a few MB
(tens of thousands of windows). A threshold on the maximum alone is right for
one length only.

:class:`WindowNull` is the distribution of a harmless window's logit, measured
on the training split's harmless windows by models that never saw them
(out-of-fold). For an artifact of ``n`` windows whose best window has logit
``m`` it gives the scan statistic ``p = P(max of n harmless windows >= m) =
1 - (1 - q(m))**n``, ``q(m)`` being one window's tail; the artifact's score is
``1 - p``, and its threshold is chosen on train like any other. ``n`` may be
counted from a reference length (an artifact of up to that many windows counts
as one): where train holds artifacts of many lengths its threshold already
fits them, and the discount is for what lies beyond. Windows
overlap and are not independent, so ``p`` is not a calibrated probability, only
a monotone reading of (m, n) that no longer rises with length by itself.
Beyond the highest harmless window seen the tail is extrapolated as an
exponential in the logit (fitted on the top of the null), so a strong window
stays decisive in an artifact of any size.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

# The tail is kept as this many knots, spaced evenly in log-probability from 1 down to the level
# that still has MIN_TAIL_COUNT harmless windows above it (rarer levels are too noisy to read).
KNOTS = 256
MIN_TAIL_COUNT = 50
# The exponential tail is fitted on the windows above this null quantile.
TAIL_FIT_QUANTILE = 0.98
# The fitted tail's decay (log-probability per logit unit) is kept in this range: a flat fit would
# make the strongest window in a large artifact worthless, a steep one would make any excess decisive.
MIN_SLOPE, MAX_SLOPE = 0.25, 4.0


@dataclass(frozen=True)
class WindowNull:
    """One harmless window's logit tail ``log P(logit >= x)``, as knots plus an exponential tail."""

    knots: np.ndarray  # ascending logits
    log_tail: np.ndarray  # log P(harmless window logit >= knot), non-increasing, log_tail[0] == 0
    slope: float  # beyond the last knot the log tail falls by this much per logit unit
    # Artifacts up to this many windows are read as one window: the threshold chosen on train
    # already fits the lengths train has, and only longer artifacts are discounted (by n / this).
    reference_windows: float = 1.0

    @classmethod
    def fit(cls, null_logits: np.ndarray, reference_windows: float = 1.0) -> WindowNull:
        """The null from the out-of-fold logits of harmless windows."""
        logits = np.sort(np.asarray(null_logits, dtype=np.float64))
        count = logits.size
        if count < 2 * MIN_TAIL_COUNT:
            raise ValueError(f"a window null needs at least {2 * MIN_TAIL_COUNT} harmless windows")
        # tail[i] = P(logit >= logits[i]) = (count - i) / count over the sorted sample
        levels = np.geomspace(1.0, MIN_TAIL_COUNT / count, KNOTS)
        index = np.clip(np.round(count - levels * count).astype(np.int64), 0, count - 1)
        index = np.unique(index)
        knots = logits[index]
        log_tail = np.log((count - index) / count)
        knots, first = np.unique(knots, return_index=True)  # ties: keep the largest tail per logit
        log_tail = log_tail[first]
        top = logits[int(TAIL_FIT_QUANTILE * count) :]
        slope = _exponential_slope(top, count)
        return cls(knots=knots, log_tail=log_tail, slope=slope, reference_windows=max(1.0, reference_windows))

    @classmethod
    def from_archive(cls, archive: np.lib.npyio.NpzFile, prefix: str = "null") -> WindowNull | None:
        """The null stored in a model artifact, or ``None`` for an artifact without one."""
        if f"{prefix}_knots" not in archive.files:
            return None
        return cls(
            knots=archive[f"{prefix}_knots"].astype(np.float64),
            log_tail=archive[f"{prefix}_log_tail"].astype(np.float64),
            slope=float(archive[f"{prefix}_slope"]),
            reference_windows=float(archive[f"{prefix}_reference_windows"]),
        )

    def arrays(self, prefix: str = "null") -> dict[str, Any]:
        """Keyword arguments for ``np.savez_compressed``."""
        return {
            f"{prefix}_knots": self.knots.astype(np.float32),
            f"{prefix}_log_tail": self.log_tail.astype(np.float32),
            f"{prefix}_slope": np.float32(self.slope),
            f"{prefix}_reference_windows": np.float32(self.reference_windows),
        }

    def log_window_tail(self, logit: float) -> float:
        """``log P(harmless window logit >= logit)``."""
        if logit <= self.knots[0]:
            return 0.0
        if logit >= self.knots[-1]:
            return float(self.log_tail[-1]) - self.slope * (logit - float(self.knots[-1]))
        return float(np.interp(logit, self.knots, self.log_tail))

    def logit_at_tail(self, tail: float) -> float:
        """The logit that a share ``tail`` (0 < tail <= 1) of harmless windows reaches: the inverse
        of :meth:`log_window_tail`, on the exponential beyond the last knot."""
        if not 0.0 < tail <= 1.0:
            raise ValueError(f"a tail is a share of windows in (0, 1], not {tail!r}")
        level = math.log(tail)
        if level >= float(self.log_tail[-1]):  # log_tail falls as the knots rise: read it reversed
            return float(np.interp(level, self.log_tail[::-1], self.knots[::-1]))
        return float(self.knots[-1]) + (float(self.log_tail[-1]) - level) / self.slope

    def artifact_logit(self, best_logit: float, windows: int) -> float:
        """``logit(1 - p)``, ``p`` the chance that the best of ``n`` harmless windows reaches
        ``best_logit``, with ``n = windows / reference_windows`` (at least 1)."""
        log_q = self.log_window_tail(best_logit)
        if log_q >= 0.0:
            return -math.inf  # no window is less likely than this under the null
        n = max(1.0, windows / self.reference_windows)
        # log(1 - p) = n * log(1 - q); p = -expm1(n * log1p(-q)), written to stay exact for tiny q
        log_not_p = n * math.log1p(-math.exp(log_q))
        p = -math.expm1(log_not_p)
        if p <= 0.0:
            # q so small that n * log1p(-q) rounds to zero: p ~ n * q
            return -(math.log(n) + log_q)
        return log_not_p - math.log(p)

    def artifact_logits(self, best_logits: np.ndarray, windows: np.ndarray) -> np.ndarray:
        """:meth:`artifact_logit` for many artifacts (training-time use)."""
        return np.array(
            [self.artifact_logit(float(m), int(n)) for m, n in zip(best_logits, windows, strict=True)]
        )


def _exponential_slope(top: np.ndarray, count: int) -> float:
    """The decay of ``log P(logit >= x)`` over the top of the null, by least squares."""
    if top.size < 3 or float(top[-1] - top[0]) <= 0.0:
        return MAX_SLOPE
    ranks = np.arange(top.size, 0, -1)  # the sorted top: the i-th has (top.size - i) at or above it
    log_tail = np.log(ranks / count)
    centred = top - top.mean()
    slope = -float((centred * (log_tail - log_tail.mean())).sum() / (centred * centred).sum())
    return float(min(MAX_SLOPE, max(MIN_SLOPE, slope)))


def expit(logit: float) -> float:
    """The logistic function, without overflow at either end."""
    if logit >= 0.0:
        return 1.0 / (1.0 + math.exp(-logit))
    odds = math.exp(logit)
    return odds / (1.0 + odds)
