"""The reader cascade: where a windowed model's vote names its windows, and the reader that
re-reads the best of them.

A local model ranks windows (:mod:`worker.detectors.local.windows`). Its vote names its best
windows by where they lie (:func:`named_places`), so the quorum can tell one passage from two. With
a reader (:mod:`worker.detectors.local.reader`) the model only ranks, and the reader's logits on the
ranked windows are the vote (:func:`reread`); a second ranker (:func:`second_ranker`) points the
reader at a window the first one ranked too low.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

import numpy as np

from worker.core.detector import verdict_output
from worker.core.errors import DetectorError
from worker.core.mail import text_parts
from worker.core.models import Answer, Coverage, ErrorKind, ScoredWindow, Verdict
from worker.core.offsets import Mapped
from worker.core.prose import prose_raw_spans
from worker.core.views import DECODED, PROSE, RAW, View, raw_span
from worker.detectors.local.scan_statistic import expit

if TYPE_CHECKING:
    from worker.detectors.local.windows import WindowedModel

TOP_WINDOWS = 3  # the best windows a vote names (by view and offsets), for a reviewer
# ``second_ranker``: of the head's SECOND_SHORTLIST best windows, the reader also reads the second
# model's best (SECOND_WINDOWS) where its logit lies in that model's band of doubt: over the level
# only SECOND_TAIL of harmless windows reach (its window null, out of fold on train), under the level
# where that model votes harmful on it alone. Chosen on train attacks planted in carriers: the 10 %
# tail found 3 more of 1,200 for twice the reads; scoring every window instead of 16 found 2-3 more
# of 300 at 16-64 KB for 3x the CPU and a 64 KB carrier more blocked
# (docs/measurements.md#a-second-ranker). Only in texts up to SECOND_UP_TO bytes: it was
# chosen on carriers of up to 66 KB, and of 220 real releases up to 1 MB it changed one, a 1.0 MB
# diff whose extra window was the reader's lone false alarm.
SECOND_WINDOWS = 1
SECOND_TAIL = 0.05
SECOND_SHORTLIST = 16
SECOND_UP_TO = 128 << 10
SECOND_RANKERS = ("lexical",)  # the policy's models that may rank for a reader


class Reader(Protocol):
    """A second model that re-reads a ranking model's best windows (worker.detectors.local.reader)."""

    @property
    def count(self) -> int: ...  # how many of the best windows it reads
    @property
    def floor(self) -> float: ...  # the ranking model's logit a window must reach to be read
    @property
    def threshold(self) -> float: ...  # its own cut, a logit

    def logits(self, windows: list[str]) -> np.ndarray: ...


# A ranked window: (-logit, order, view's name, view, span, logit in the model's dtype, text)
Ranked = tuple[float, int, str, "View", tuple[int, int], np.floating[Any], str]


class SecondRanker(NamedTuple):
    """A second model whose best windows a reader reads too, in texts of up to ``up_to`` bytes: of
    its ``windows`` best among the first model's ``shortlist``, each whose logit is at least
    ``floor`` and under ``ceiling`` (see :func:`second_ranker`)."""

    model: WindowedModel
    windows: int
    floor: float
    ceiling: float = math.inf
    shortlist: int = SECOND_SHORTLIST  # it ranks the first model's this many best windows
    up_to: int = SECOND_UP_TO  # in texts of at most this many bytes


def second_ranker(model: WindowedModel) -> SecondRanker:
    """``model`` ranking for a reader in texts of up to ``SECOND_UP_TO`` bytes: of the first model's
    ``SECOND_SHORTLIST`` best windows, its ``SECOND_WINDOWS`` best, each read if its logit reaches
    the ``SECOND_TAIL`` of the model's harmless windows and stays under the logit from which the
    model votes harmful on a text of that one window. A window over that is the model's own harmful
    vote: the reader confirming the passage its selector flagged is one finding twice, and on
    train's planted carriers those pairs were the only false alarms it added."""
    if model.null is None:
        raise DetectorError(
            "a second ranker needs a model with a window null (its floor)", kind=ErrorKind.unavailable
        )
    floor = model.null.logit_at_tail(SECOND_TAIL)
    ceiling = model.null.logit_at_tail(1.0 - model.threshold)
    return SecondRanker(model, SECOND_WINDOWS, floor, ceiling, SECOND_SHORTLIST, SECOND_UP_TO)


def vote_of(top: list[ScoredWindow], threshold: float, coverage: Coverage) -> Answer:
    """The vote of the best windows ``top`` (best first) against ``threshold``. A harmful vote names
    only the windows that reach it alone: a window the model scored under its cut is no place it
    found harm, and the quorum's ``colocate`` reads these places (a rules span beside such a window
    of a long harmless document is no passage both flagged). A harmless vote names all of them."""
    score = top[0].score if top else 0.0
    verdict: Verdict = "harmful" if score >= threshold else "harmless"
    if verdict == "harmful":
        top = [window for window in top if window.score >= threshold]
    return Answer(output=verdict_output(verdict), coverage=coverage, score=score, windows=tuple(top))


Place = tuple[str, tuple[int, int], tuple[int, int] | None]  # view, offsets, raw bytes (ScoredWindow)


def named_places(data: bytes, ranked: list[Ranked]) -> list[Place]:
    """Where a vote names each of the ``ranked`` windows: a window of a diff's added lines, of its
    prose or of a JSON document's fields by where it lies in the raw bytes (so the quorum compares
    it with the rules' spans and the other models' windows), one of an e-mail's decoded text part
    by its own offsets (what a reviewer is shown) and the encoded lines that write it, any other by
    its view and offsets. A diff's prose is read once more, up to its furthest named window, and an
    e-mail's parts are found again, only when one of theirs is named."""
    places: list[Place] = []
    for _, _, name, view, span, _, _ in ranked:
        raw = None if name.startswith(DECODED) else raw_span(view, *span)  # a part's offsets are its own
        places.append((RAW, raw, None) if raw else (name, span, None))
    prose = [index for index, (name, _, _) in enumerate(places) if name == PROSE]
    if prose:
        found = prose_raw_spans(data, [places[index][1] for index in prose])
        for index, raw in zip(prose, found, strict=True):
            if raw is not None:
                places[index] = (RAW, raw, None)
    if any(name.startswith(DECODED) for name, _, _ in places):
        parts = text_parts(data)
        for index, ((name, span, _), item) in enumerate(zip(places, ranked, strict=True)):
            number = name.removeprefix(DECODED)
            if name.startswith(DECODED) and number.isdigit() and int(number) < len(parts):
                view = item[3]  # the part's text, or that text with its references read
                in_part = view.raw_span(*span) if isinstance(view, Mapped) else span
                places[index] = (
                    name,
                    span,
                    None if in_part is None else parts[int(number)].raw_span(*in_part),
                )
    return places


def second_best(shortlist: list[Ranked], second: SecondRanker) -> list[Ranked]:
    """Of the first model's ``shortlist``, the second model's ``windows`` best whose logit
    lies in its band (at least ``floor``, under ``ceiling``)."""
    if not shortlist:
        return []
    others = second.model.logits([item[6] for item in shortlist])
    best = np.argsort(-others, kind="stable")[: second.windows].tolist()
    return [shortlist[i] for i in best if second.floor <= float(others[i]) < second.ceiling]


def reread(
    data: bytes,
    best: list[Ranked],
    reader: Reader,
    threshold: float,
    coverage: Coverage,
    also: Sequence[Ranked] = (),
) -> Answer:
    """The vote of ``reader`` on the ranking model's best windows that reach its floor and on the
    second ranker's (``also``) it has not read yet, named by the reader's probabilities, best first.
    The reader judges each window on its own, so a harmful vote names only the windows it found
    harmful (:func:`vote_of`)."""
    chosen = [item for item in best[: reader.count] if float(item[5]) >= reader.floor]
    read = {item[1] for item in chosen}  # by order: each window is read once
    chosen += [item for item in also if item[1] not in read]
    logits = reader.logits([item[6] for item in chosen])
    order = np.argsort(-logits, kind="stable")[:TOP_WINDOWS].tolist()
    places = named_places(data, [chosen[i] for i in order])
    top: list[ScoredWindow] = []
    for i, (place, (start, end), raw) in zip(order, places, strict=True):
        logit = float(logits[i])
        top.append(ScoredWindow(view=place, start=start, end=end, logit=logit, score=expit(logit), raw=raw))
    return vote_of(top, threshold, coverage)
