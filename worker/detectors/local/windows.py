"""Shared plumbing of the local model detectors: windows, lazy artifacts, answers.

Both ``lexical`` and ``semantic`` scan every byte: the artifact is cut into
overlapping byte windows (:func:`worker.core.segment.segment_spans`), each
window is scored, and the best window decides. Max is the right aggregation
for "does any part of this try something": a 300-byte injection 30 KB deep in
a benign log moves one window, and a mean would dilute it away. A model
trained with a window null reads that maximum against the number of windows
(:mod:`worker.detectors.local.scan_statistic`), so that length alone does not
raise the score. What the vote names, and the reader that re-reads the best windows, live in
:mod:`worker.detectors.local.cascade`.
"""

from __future__ import annotations

import hashlib
import os
import re
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import replace
from itertools import islice
from pathlib import Path
from typing import Any, ClassVar, Protocol, TypeVar

import numpy as np

from policies.loader import current_sha256, default_models_dir
from worker.core.detector import Artifact
from worker.core.errors import ConfigError, DetectorError
from worker.core.models import Answer, Coverage, ErrorKind, ScoredWindow
from worker.core.policy import HarmPolicy
from worker.core.segment import coverage_of, segment_spans
from worker.core.views import Streamed, View, scanned_views
from worker.detectors.local.cascade import (
    SECOND_RANKERS,
    TOP_WINDOWS,
    Ranked,
    Reader,
    SecondRanker,
    named_places,
    reread,
    second_best,
    second_ranker,
    vote_of,
)
from worker.detectors.local.scan_statistic import WindowNull, expit

T = TypeVar("T")

BATCH_BYTES = 1 << 20  # window text scored per model call, unless the model says (``batch_bytes``)
_LOCK = threading.RLock()  # re-entrant: a model loader may load a shared artifact
_CACHE: dict[tuple[str, str], tuple[tuple[str, ...], object]] = {}  # -> (digests, model)


def models_dir() -> Path:
    """Where the trained artifacts live (package data of ``worker.weights``)."""
    return Path(default_models_dir())


def cached(kind: str, key: str, digests: tuple[str, ...], load: Callable[[], T]) -> T:
    """Load an artifact once per content of its files (thread-safe); new content replaces old."""
    found = _CACHE.get((kind, key))
    if found is None or found[0] != digests:
        with _LOCK:
            found = _CACHE.get((kind, key))
            if found is None or found[0] != digests:
                found = _CACHE[(kind, key)] = (digests, load())
    return found[1]  # type: ignore[return-value]


def model_digests(paths: Sequence[Path], policy: HarmPolicy | None, what: str) -> tuple[str, ...]:
    """The sha256 of each model file as it is now, which must be what ``policy`` was
    fingerprinted with: a model swapped since the policy was loaded never judges its gates
    (the vote is ``unavailable``, so the gate goes to review). A missing file: ``unavailable``."""
    digests = []
    for path in paths:
        try:
            digest = current_sha256(str(path))
        except OSError:
            raise DetectorError(f"no {what} ({path.name} is missing)", kind=ErrorKind.unavailable) from None
        pinned = None if policy is None else policy.model_sha256(os.path.abspath(path))
        if pinned is not None and pinned != digest:
            raise DetectorError(
                f"{what} ({path.name}) changed since its policy was loaded", kind=ErrorKind.unavailable
            )
        digests.append(digest)
    return tuple(digests)


def verified_bytes(path: Path, digest: str) -> bytes:
    """The bytes of ``path``, which must hash to ``digest`` (not rewritten since it was hashed)."""
    raw = path.read_bytes()
    if hashlib.sha256(raw).hexdigest() != digest:
        raise DetectorError(f"model file {path.name} changed while it was read", kind=ErrorKind.unavailable)
    return raw


def window_spans(total: int, window: int, overlap: int) -> list[tuple[int, int]]:
    """The byte windows that together cover ``[0, total)``."""
    return list(segment_spans(total, window, overlap))


def window_texts(data: bytes, spans: list[tuple[int, int]]) -> list[str]:
    """Decode each window; a character cut at an edge becomes U+FFFD (the overlap sees it whole)."""
    return list(lazy_window_texts(data, spans))


def lazy_window_texts(data: bytes, spans: Iterable[tuple[int, int]]) -> Iterator[str]:
    """``window_texts``, one window at a time."""
    return (data[start:end].decode("utf-8", errors="replace") for start, end in spans)


class WindowedModel(Protocol):
    # Read-only members, so that frozen dataclasses (the lexical and semantic models) conform.
    @property
    def threshold(self) -> float: ...
    @property
    def window(self) -> int: ...
    @property
    def overlap(self) -> int: ...
    @property
    def null(self) -> WindowNull | None: ...

    def logits(self, windows: list[str]) -> np.ndarray: ...


def artifact_score(model: WindowedModel, logits: np.ndarray) -> float:
    """The artifact's score from its windows' logits: the best window's probability, or, for a
    model trained with a window null, one minus the chance that the best of this many harmless
    windows scores as high (see :mod:`worker.detectors.local.scan_statistic`)."""
    return best_window_score(model, logits.max() if logits.size else None, int(logits.size))


def best_window_score(
    model: WindowedModel, best: np.floating[Any] | None, count: int, reference_windows: float | None = None
) -> float:
    """``artifact_score`` from the best of ``count`` window logits (None: no window);
    ``reference_windows`` overrides the null's reference length (see :class:`WindowedModelDetector`)."""
    if best is None or count == 0:
        return 0.0
    if model.null is None:  # in the logits' own dtype, as the vote was computed before nulls existed
        return float(1.0 / (1.0 + np.exp(-best)))
    null = (
        model.null if reference_windows is None else replace(model.null, reference_windows=reference_windows)
    )
    return expit(null.artifact_logit(float(best), count))


def scored_answer(
    data: bytes,
    model: WindowedModel,
    threshold: float,
    prose: bool = False,
    reference_windows: float | None = None,
    paragraphs: int | None = None,
    reader: Reader | None = None,
    second: SecondRanker | None = None,
) -> Answer:
    """Score every window of ``data`` and answer with full coverage and the best windows.

    A model trained on what releases add (``added_only``) reads a diff without its removed lines
    (:func:`worker.core.views.added_view`); the coverage still counts every byte, removed lines
    being read, and left out on purpose. An e-mail's base64 or quoted-printable text parts are
    also scored decoded (what its reader sees), in windows of their own; so is, with ``prose``,
    the text a diff adds inside code (comments, docstrings, sentence-like strings:
    :mod:`worker.core.prose`), and with ``paragraphs`` (bytes) each paragraph of at least that
    many bytes as a window of its own too (:func:`paragraph_spans`). The coverage stays that of
    the raw bytes, all of them. A window of a diff's added view or its prose is named by where it
    lies in the raw bytes (its first to its last byte), so that the quorum reads a model's place
    against the rules' places in the same offsets.
    Windows are scored ``BATCH_BYTES`` (or the model's ``batch_bytes``) of text at a time and only
    the ``TOP_WINDOWS`` best are kept (by view and offsets), so memory stays flat however large the
    artifact; windows and their spans are produced lazily, never as lists.
    With a ``reader`` (:mod:`worker.detectors.local.reader`), the model only ranks: the reader
    reads its ``count`` best windows whose logit reaches the reader's ``floor``, and the best of
    the reader's logits against ``threshold`` (a probability) is the vote. A text whose best
    window stays under the floor is harmless without being read again. With a ``second`` ranker as
    well, the reader also reads that model's best windows within its band: a passage planted in a
    long text that the first model ranks under the text's other windows.
    """
    # ``added_only``: an artifact flag of the lexical and semantic models; other models read raw bytes.
    views = scanned_views(data, getattr(model, "added_only", False), prose)
    windows = (
        (name, view, span, text)
        for name, view in views
        for span, text in _view_windows(view, model, paragraphs)
    )
    per_batch = max(1, getattr(model, "batch_bytes", BATCH_BYTES) // model.window)
    shortlist = 0  # the first model's best windows the second ranker ranks, in a text it reads
    if second is not None and reader is not None and len(data) <= second.up_to:
        shortlist = second.shortlist
    kept = max(TOP_WINDOWS, reader.count if reader else 0, shortlist)
    # (-logit, order, view's name, view, span, logit in the model's dtype, text), best first; ties:
    # the earlier window
    best: list[Ranked] = []
    count = 0
    while batch := list(islice(windows, per_batch)):
        logits = model.logits([text for _, _, _, text in batch])
        for i in np.argsort(-logits, kind="stable")[:kept].tolist():
            best.append((-float(logits[i]), count + i, *batch[i][:3], logits[i], batch[i][3]))
        best = sorted(best, key=lambda item: item[:2])[:kept]
        count += int(logits.size)
    spans = segment_spans(len(data), model.window, model.overlap)
    coverage: Coverage = coverage_of(spans, len(data), model.window, model.overlap)
    if reader is not None:
        also = second_best(best[:shortlist], second) if second is not None else []
        return reread(data, best, reader, threshold, coverage, also)
    named = best[:TOP_WINDOWS]
    top: list[ScoredWindow] = []
    for (place, (start, end), raw), (*_, logit, _) in zip(named_places(data, named), named, strict=True):
        with np.errstate(over="ignore"):  # a model without a null: a far-off window's score is 0.0
            score = best_window_score(model, logit, count, reference_windows)
        top.append(ScoredWindow(view=place, start=start, end=end, logit=float(logit), score=score, raw=raw))
    return vote_of(top, threshold, coverage)


def _view_windows(
    view: View, model: WindowedModel, paragraphs: int | None = None
) -> Iterator[tuple[tuple[int, int], str]]:
    """Each window of ``view`` with its text, one at a time (the spans of a 100 MB artifact as a
    list were 0.3 bytes per byte); with ``paragraphs``, then each paragraph of a view held whole
    of at most :data:`PARAGRAPH_VIEW_BYTES` (see :func:`paragraph_spans`)."""
    if isinstance(view, Streamed):
        for span, text in view.windows(model.window, model.overlap):
            yield span, text.decode("utf-8", errors="replace")
        return
    for start, end in segment_spans(len(view), model.window, model.overlap):
        yield (start, end), view[start:end].decode("utf-8", errors="replace")
    if paragraphs is not None and len(view) <= PARAGRAPH_VIEW_BYTES:
        whole = view if isinstance(view, bytes) else bytes(view[0 : len(view)])
        for start, end in paragraph_spans(whole, paragraphs, model.window):
            yield (start, end), whole[start:end].decode("utf-8", errors="replace")


PARAGRAPH_VIEW_BYTES = 64 << 10  # paragraphs are read in views up to this long (the lexical null's reference)
_PARAGRAPH_BREAK = re.compile(rb"\n[ \t+]*\n\s*")  # a blank line (in a diff: a blank added or context line)


def paragraph_spans(data: bytes, shortest: int, longest: int) -> Iterator[tuple[int, int]]:
    """``[start, end)`` of each paragraph of ``data`` (text between blank lines) of ``shortest`` to
    ``longest`` bytes. A text of several lines and no blank line (a service's log, a CSV export, a
    tool's table) is a list of records: each line is its paragraph. One line alone is left to the
    windows, which read it whole.

    A fixed window holds whatever surrounds a passage: an order of 300 bytes between an issue's
    title and its first comment is read diluted by both (the n-grams are normalised over the
    window), or cut in two. Read as a paragraph of its own as well, it scores as it would alone.
    Short paragraphs (headings, one-liners) are left to the windows: alone, they score far more
    extreme than the windows a model's threshold and null were fitted on. A log's line of an order
    among other lines is read diluted by them the same way (train's attacks planted in 2 KB logs and
    CSV exports, the lexical model alone: 233 -> 240 of 300 caught once lines are read so)."""
    start = 0
    for match in _PARAGRAPH_BREAK.finditer(data):
        if shortest <= match.start() - start <= longest:
            yield start, match.start()
        start = match.end()
    if start and shortest <= len(data) - start <= longest:
        yield start, len(data)
    if not start and b"\n" in data.strip():  # lines without a blank one between: each a record
        for match in _LINE.finditer(data):
            if shortest <= match.end() - match.start() <= longest:
                yield match.start(), match.end()


_LINE = re.compile(rb"[^\n]+")


class WindowedModelDetector:
    """A local model that scores every window of the artifact; the highest window decides.

    Subclasses name their ``backend`` and say how to ``load`` the policy's model (the files
    the policy was fingerprinted with); ``threshold`` overrides the trained one, ``models_dir``
    the shipped artifacts, and ``prose: true`` also reads a diff's comments and strings on their
    own (see :func:`scored_answer`). ``reference_windows`` overrides the length, in windows, up to
    which an artifact is read as one window by a model with a window null (trained: 64 KB for the
    lexical models): a policy that gates long logs and would rather review than miss an injection
    deep inside sets it high (e.g. 1e9: the best window alone, judged by the same cut).
    ``paragraphs: N`` also reads each paragraph of N bytes up to a window as a window of its own
    (see :func:`paragraph_spans`). ``reader: true`` (semantic only) has a fine-tuned transformer
    re-read the best windows and vote (see :func:`scored_answer`); ``threshold`` is then its cut.
    ``second_ranker: lexical`` (with a reader) has the reader also read the window the policy's
    lexical model ranks first among the head's best (see :func:`second_ranker`).
    """

    backend: ClassVar[str]
    # Every option ``__init__`` reads; the policy preflight refuses any other (worker.detectors.preflight).
    OPTIONS: ClassVar[frozenset[str]] = frozenset(
        {"models_dir", "paragraphs", "prose", "reader", "reference_windows", "second_ranker"}
    )
    # With ``reader: true`` (the semantic detector only), a reader re-reads the best windows.
    READS_AGAIN: ClassVar[bool] = False

    def __init__(self, name: str | None = None, threshold: float | None = None, **options: Any) -> None:
        self.name = name or self.backend
        self.threshold = threshold
        self.models_dir: Path | None = Path(options["models_dir"]) if "models_dir" in options else None
        self.prose = options.get("prose", False)
        if not isinstance(self.prose, bool):  # a YAML "no" or "off" quoted as a string would read as true
            raise ConfigError(f"{self.name}: prose must be true or false, not {self.prose!r}")
        reference = options.get("reference_windows")
        if reference is not None and (
            isinstance(reference, bool) or not (isinstance(reference, int | float) and reference >= 1)
        ):
            raise ConfigError(f"{self.name}: reference_windows must be a number >= 1, not {reference!r}")
        self.reference_windows = None if reference is None else float(reference)
        self.reader = options.get("reader", False)
        if not isinstance(self.reader, bool):
            raise ConfigError(f"{self.name}: reader must be true or false, not {self.reader!r}")
        if self.reader and not self.READS_AGAIN:
            raise ConfigError(f"{self.name}: only the semantic detector takes a reader")
        self.second_ranker = options.get("second_ranker")
        if self.second_ranker is not None and self.second_ranker not in SECOND_RANKERS:
            known = ", ".join(SECOND_RANKERS)
            raise ConfigError(
                f"{self.name}: second_ranker must be one of {known}, not {self.second_ranker!r}"
            )
        if self.second_ranker is not None and not self.reader:
            raise ConfigError(f"{self.name}: second_ranker ranks windows for a reader; set reader: true")
        self.paragraphs = options.get("paragraphs")
        if self.paragraphs is not None and (
            isinstance(self.paragraphs, bool) or not isinstance(self.paragraphs, int) or self.paragraphs < 1
        ):
            raise ConfigError(
                f"{self.name}: paragraphs must be a number of bytes >= 1, not {self.paragraphs!r}"
            )

    def load(self, policy: HarmPolicy) -> WindowedModel:
        raise NotImplementedError

    def load_reader(self, policy: HarmPolicy) -> Reader:
        raise NotImplementedError

    def load_second(self, policy: HarmPolicy) -> SecondRanker:
        """The policy's lexical model ranking for the reader (``second_ranker: lexical``)."""
        from worker.detectors.local.lexical import load_model  # that module imports this one

        return second_ranker(load_model(policy.id, self.models_dir, policy))

    def answer(self, artifact: Artifact, policy: HarmPolicy) -> Answer:
        model = self.load(policy)
        reader = self.load_reader(policy) if self.reader else None
        second = self.load_second(policy) if self.second_ranker else None
        trained = model.threshold if reader is None else expit(reader.threshold)
        threshold = trained if self.threshold is None else self.threshold
        return scored_answer(
            artifact.data,
            model,
            threshold,
            self.prose,
            self.reference_windows,
            self.paragraphs,
            reader,
            second,
        )
