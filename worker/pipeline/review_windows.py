"""Why the models blocked a gate: the windows their votes scored highest, read back for a reviewer.

A local model's vote names its best windows by view and byte offsets, never by their text
(:class:`worker.core.models.ScoredWindow`). When the pre-check did not block a gate, the models
did (or left it to a person), and a reviewer wants to see what they read: :func:`model_windows`
picks those windows from the stored report and reads their bytes from the stored artifact,
rebuilding the view each names (:func:`worker.core.views.view_bytes`). The bytes are untrusted:
the caller shows them neutralised (:func:`worker.pipeline.review.visible`), fenced as data. A
window of a JSON document read as its fields is named by its raw bytes and shown with the escapes
undone (:func:`worker.core.fields.reader_view`), as the model read it.

Reports written before votes carried windows have none, and show none.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from worker.core.views import RAW, Sliceable, view_bytes

RULES = "rules"  # the backend of the rules detector (worker.detectors.local.rules)


@dataclass(frozen=True)
class ShownWindow:
    """One window to show: where it lies, which votes named it with what score, and its bytes
    (``None`` when the view cannot be rebuilt from the stored artifact)."""

    view: str
    start: int
    end: int
    scores: tuple[tuple[str, float], ...]  # (detector, score), highest first
    text: bytes | None
    view_size: int | None

    @property
    def score(self) -> float:
        return self.scores[0][1]

    @property
    def label(self) -> str:
        """``lexical 0.997, semantic 1.000``: the detectors that named it and their scores."""
        return ", ".join(f"{detector} {score:.3f}" for detector, score in self.scores)


def model_windows(
    report: dict[str, Any], data: bytes, top: int = 3, read: Callable[[bytes], bytes] | None = None
) -> list[ShownWindow]:
    """The ``top`` windows the model votes scored highest, when the models decided (see
    :func:`driven_by_models`); a window named by raw bytes shown through ``read`` when given (the
    caller's :func:`worker.core.fields.reader_view` of ``data``, asked once per artifact).

    The harmful votes' windows when any vote is harmful (what blocked it), else every vote's.
    Each vote's best window comes first, then each one's second best, and so on; a window two
    detectors named is shown once, with both scores."""
    votes = [v for v in report.get("votes") or [] if isinstance(v, dict)]
    if not driven_by_models(report, votes):
        return []
    votes = [v for v in votes if v.get("backend") != RULES]  # the rules' places are their evidence
    harmful = [v for v in votes if v.get("verdict") == "harmful" and v.get("windows")]
    found: dict[tuple[str, int, int], tuple[int, list[tuple[str, float]]]] = {}
    for vote in harmful or votes:
        detector = str(vote.get("detector", "?"))
        for rank, (view, start, end, score) in enumerate(_windows_of(vote)):
            best_rank, scores = found.setdefault((view, start, end), (rank, []))
            found[(view, start, end)] = (min(best_rank, rank), [*scores, (detector, score)])
    ordered = sorted(found.items(), key=lambda item: (item[1][0], -max(s for _, s in item[1][1])))
    views: dict[str, Sliceable | None] = {}
    shown = []
    for (view, start, end), (_, scores) in ordered[:top]:
        if view not in views:
            views[view] = view_bytes(data, view)
        source = views[view]
        text = bytes(source[start:end]) if source is not None and end <= len(source) else None
        if text is not None and view == RAW and read is not None:
            text = read(text)
        ranked = tuple(sorted(scores, key=lambda s: -s[1]))
        shown.append(ShownWindow(view, start, end, ranked, text, None if source is None else len(source)))
    return shown


def driven_by_models(report: dict[str, Any], votes: list[dict[str, Any]]) -> bool:
    """Whether the models, not the rules, decided: the pre-check did not block it and no rules
    detector voted harmful (then the rule evidence says why, as it always has)."""
    precheck = report.get("precheck")
    if not isinstance(precheck, dict) or precheck.get("verdict") == "harmful":
        return False
    return not any(v.get("backend") == RULES and v.get("verdict") == "harmful" for v in votes)


def _windows_of(vote: dict[str, Any]) -> list[tuple[str, int, int, float]]:
    """A vote's windows as ``(view, start, end, score)``, highest score first; malformed ones
    (a report is data read back from storage) are left out."""
    out = []
    for window in vote.get("windows") or []:
        if not isinstance(window, dict):
            continue
        start, end, score = window.get("start"), window.get("end"), window.get("score")
        view = window.get("view", RAW)
        if (
            isinstance(start, int)
            and isinstance(end, int)
            and 0 <= start < end
            and isinstance(score, int | float)
            and isinstance(view, str)
            and view.isascii()
            and view.isprintable()
            and len(view) <= 32
        ):
            out.append((view, start, end, float(score)))
    return sorted(out, key=lambda w: -w[3])
