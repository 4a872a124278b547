"""Which windows of a planted copy hold the planted record: window labels that training knows.

A planted copy (:func:`worker.training.data.with_planted_copies`) is a train attack set inside a
harmless carrier: pieces of a harmless diff, README prose, an e-mail, a ticket, a table, JSON tool
output or a web page. Multiple-instance training labels every window of a harmful artifact harmful
at first and then keeps those near its best window. For a copy, most windows are carrier alone,
the same kind of text as the carriers alone labelled harmless, so that first fit teaches ordinary
prose and code as harmful, and its witnesses are often carrier windows.

We know what was planted. A window that holds at least half of the record's word trigrams (or of
its own, for a record longer than the window) holds the attack: harmful. A window that holds none
of them is carrier alone: harmless. A window in between holds an edge of the attack and is left
out. A copy where no window qualifies as harmful (a record of fewer than ``MIN_SHINGLES`` trigrams,
or one the carrier mangled) keeps the usual multiple-instance labels.

``python -m worker.training --witnesses lexical --witnesses semantic``; not the shipped recipe.
Train group-CV of the prompt-injection quorum (the objective of worker.training.ensemble: FNR +
FPR + code FPR + long-carrier FPR + planted copies' FNR + FPR, thresholds re-chosen for each pair,
2026-11-28): neither model told 0.4356, the semantic head 0.4476, the lexical model 0.5323 (FPR
6.3 -> 8.4 %, harmless records planted in carriers 16.1 -> 22.3 % blocked), both 0.5520. Told
that a carrier's windows are harmless, a model learns that any passage unlike its carrier is
harmful, and harmless passages are planted too. Both told, beside the shipped models
(``benchmarks/planted.py``): dev attacks caught in 1 / 8 / 64 KB carriers 88.2 / 77.2 / 71.5 %
against 85.4 / 77.2 / 69.5 %, but 64 KB carriers alone blocked 4.3 against 2.9 % and dev false
positives 31 against 25 of 190.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from worker.training.data import (
    LONG_PLANTED_SUFFIX,
    PLANTED_SUFFIX,
    Corpus,
    planted_mask,
    scored_mask,
)

UNKNOWN, HARMLESS, HARMFUL, LEFT_OUT = -1, 0, 1, 2
MIN_SHINGLES = 3
HOLDS = 0.5  # the share of the record's (or the window's) trigrams that makes a window the attack's
_WORD = re.compile(r"\w+")


def shingles(text: str) -> set[tuple[str, ...]]:
    """The text's lower-cased word trigrams."""
    words = _WORD.findall(text.lower())
    return {tuple(words[i : i + 3]) for i in range(len(words) - 2)}


def source_id(copy_id: str) -> str:
    """The id of the record a planted copy was made of."""
    return copy_id.removesuffix(PLANTED_SUFFIX).removesuffix(LONG_PLANTED_SUFFIX)


def window_label(window: str, record: set[tuple[str, ...]]) -> int:
    """``HARMFUL``, ``HARMLESS`` or ``LEFT_OUT``: what one window of a copy holds of ``record``."""
    own = shingles(window)
    shared = len(own & record)
    if shared == 0:
        return HARMLESS
    if shared >= HOLDS * min(len(record), len(own)):
        return HARMFUL
    return LEFT_OUT


def known_windows(windows: Sequence[str], owner: np.ndarray, corpus: Corpus) -> np.ndarray:
    """One label per window (``owner``: its artifact in ``corpus``, as :func:`explode` gives them):
    ``HARMFUL``, ``HARMLESS`` or ``LEFT_OUT`` for the windows of the harmful planted copies that are
    trained on, ``UNKNOWN`` (the artifact's label, as multiple-instance training reads it) elsewhere."""
    known = np.full(len(windows), UNKNOWN, dtype=np.int8)
    index = {record_id: i for i, record_id in enumerate(corpus.ids)}
    labels = np.asarray(corpus.labels)
    copies = np.flatnonzero(planted_mask(corpus) & ~scored_mask(corpus) & (labels == 1))
    starts = np.searchsorted(owner, copies, side="left")
    ends = np.searchsorted(owner, copies, side="right")
    for artifact, start, end in zip(copies.tolist(), starts.tolist(), ends.tolist(), strict=True):
        source = index.get(source_id(corpus.ids[artifact]))
        if source is None:
            continue
        record = shingles(corpus.texts[source])
        if len(record) < MIN_SHINGLES:
            continue
        found = np.array([window_label(windows[w], record) for w in range(start, end)], dtype=np.int8)
        if (found == HARMFUL).any():
            known[start:end] = found
    return known
