"""Read the labelled JSON-lines corpora (``{policy}/{split}.jsonl.gz``) as plain records."""

from __future__ import annotations

import gzip
import json
import random
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from worker.core.prose import diff_prose
from worker.training.planting import (
    LONG_SCORED_SIZES,
    carrier_alone,
    cut_prose,
    harmless_payload,
    planted_in_carrier,
)

POLICIES: tuple[str, ...] = ("prompt-injection", "malicious-package")


@dataclass(frozen=True)
class Corpus:
    """One split of one policy: texts, 0/1 labels (1 = harmful) and CV groups."""

    texts: list[str]
    labels: list[int]
    groups: list[str]
    ids: list[str]


def default_datasets_dir() -> Path:
    """``$CANARY_DATASETS_DIR``, else ``../shared/datasets`` next to the repository."""
    from worker.settings import Settings

    configured = Settings.load().datasets_dir
    if configured:
        return configured
    return Path(__file__).resolve().parents[3] / "shared" / "datasets"


def load_corpus(datasets_dir: Path, policy: str, split: str) -> Corpus:
    """Load one split; texts stay in memory only, never written anywhere."""
    return load_file(datasets_dir / policy / f"{split}.jsonl.gz")


def load_file(path: Path) -> Corpus:
    """Load a labelled JSON-lines file (gzip)."""
    texts: list[str] = []
    labels: list[int] = []
    groups: list[str] = []
    ids: list[str] = []
    for record in read_records(path):
        texts.append(record["text"])
        labels.append(1 if record["label"] == "harmful" else 0)
        groups.append(record["group"])
        ids.append(record["id"])
    return Corpus(texts=texts, labels=labels, groups=groups, ids=ids)


def read_records(path: Path) -> Iterator[dict[str, Any]]:
    """Each record of a labelled JSON-lines file (gzip), as it is stored, one at a time."""
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        for line in handle:
            yield json.loads(line)


# The project's own prompt-injection corpus (``python -m worker.training.corpus``): generated
# attacks and look-alikes in carriers and ten languages, NotInject, README slices and long README
# documents; agent-directed actions from Agent Security Bench (worker/training/corpus/agents.py); and
# generated injections that steer what the reader says (worker/training/corpus/steering.py); and LLM
# applications' own prompts in their code, harmless (worker/training/corpus/prompts.py). Not in
# the shipped recipe (``python -m worker.training --errands`` adds it): requests to act on the user's
# accounts placed in tool output, and their look-alikes (worker/training/corpus/errands.py); nor
# (``--governance``) the governance files releases ship (codes of conduct, security policies,
# contributing guides, issue templates, AGENTS.md), harmless (worker/training/corpus/governance.py).
# The malicious-package models' harmless release diffs of packages no labelled split holds
# (worker/training/corpus/releases.py), and generated behaviour families with their look-alikes
# (worker/training/corpus/behaviours.py). Trained on like the policy's train split; dev is never read.
CORPUS_DIR = Path(__file__).resolve().parent / "corpus" / "data"
CORPUS_FILE = CORPUS_DIR / "prompt-injection.jsonl.gz"
AGENTS_FILE = CORPUS_DIR / "agent-actions.jsonl.gz"
STEERING_FILE = CORPUS_DIR / "steering.jsonl.gz"
ERRANDS_FILE = CORPUS_DIR / "errands.jsonl.gz"
PACKAGES_FILE = CORPUS_DIR / "package-releases.jsonl.gz"
BEHAVIOURS_FILE = CORPUS_DIR / "package-behaviours.jsonl.gz"
APP_PROMPTS_FILE = CORPUS_DIR / "app-prompts.jsonl.gz"
GOVERNANCE_FILE = CORPUS_DIR / "governance.jsonl.gz"
EXTRA_CORPORA: dict[str, tuple[Path, ...]] = {
    "prompt-injection": (CORPUS_FILE, AGENTS_FILE, STEERING_FILE, APP_PROMPTS_FILE),
    "malicious-package": (PACKAGES_FILE, BEHAVIOURS_FILE),
}
LONG_GROUP_PREFIX = "readme-long:"
# Slices of real release diffs and of the prose they add (worker/training/corpus/releases.py): long
# harmless carriers like the long READMEs, counted with them.
RELEASE_GROUP_PREFIX = "release:"


def extra_corpus(policy: str, errands: bool = False, governance: bool = False) -> Corpus:
    """The policy's committed extra training corpora, joined (empty if it has none); ``errands``,
    ``governance``: with the prompt-injection errands, governance files (not in the shipped recipe)."""
    corpus = Corpus(texts=[], labels=[], groups=[], ids=[])
    sources = EXTRA_CORPORA.get(policy, ())
    if errands and policy == "prompt-injection":
        sources = (*sources, ERRANDS_FILE)
    if governance and policy == "prompt-injection":
        sources = (*sources, GOVERNANCE_FILE)
    for source in sources:
        corpus = joined(corpus, load_file(source))
    return corpus


def joined(first: Corpus, second: Corpus) -> Corpus:
    """``first``'s records, then ``second``'s."""
    return Corpus(
        texts=first.texts + second.texts,
        labels=first.labels + second.labels,
        groups=first.groups + second.groups,
        ids=first.ids + second.ids,
    )


# Short harmless texts (a chat line, a ticket's one sentence) are much of what the gate reads, and
# the labelled records are whole documents: a model that never saw a lone harmless sentence flags
# them (benchmarks/short_texts.py). Each harmless train record also lends up to two of its sentences
# as harmless records of the same group (so the same CV fold as their source).
SENTENCE_SUFFIX = "#sentence"
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def with_sentences(corpus: Corpus, per_record: int = 2, seed: int = 0) -> Corpus:
    """``corpus`` plus up to ``per_record`` random sentences (15-300 characters) of each of its own
    harmless records, as harmless records of the same group."""
    rng = random.Random(seed)
    texts, labels, groups, ids = (
        list(corpus.texts),
        list(corpus.labels),
        list(corpus.groups),
        list(corpus.ids),
    )
    own = own_mask(corpus)  # not the borrowed code negatives, not the planted copies
    for text, label, group, record, mine in zip(
        corpus.texts, corpus.labels, corpus.groups, corpus.ids, own, strict=True
    ):
        if label != 0 or not mine:
            continue
        found = [part.strip() for part in _SENTENCE_END.split(text) if 15 <= len(part.strip()) <= 300]
        if len(found) < 2:  # a one-sentence record is its own sentence
            continue
        for index, sentence in enumerate(rng.sample(found, min(per_record, len(found)))):
            texts.append(sentence)
            labels.append(0)
            groups.append(group)
            ids.append(f"{record}{SENTENCE_SUFFIX}{index}")
    return Corpus(texts=texts, labels=labels, groups=groups, ids=ids)


def long_mask(corpus: Corpus) -> np.ndarray:
    """True for the long harmless carriers, README documents and release slices (their false
    alarms are a carrier's)."""
    prefixes = (LONG_GROUP_PREFIX, RELEASE_GROUP_PREFIX)
    return np.array([g.startswith(prefixes) for g in corpus.groups], dtype=bool)


def own_mask(corpus: Corpus) -> np.ndarray:
    """True for the policy's own records, False for borrowed code negatives, planted copies and
    records only scored."""
    borrowed = np.array([g.startswith(CODE_GROUP_PREFIX) for g in corpus.groups], dtype=bool)
    own: np.ndarray = ~borrowed & ~planted_mask(corpus) & ~scored_mask(corpus)
    return own


# Records that are only scored out of fold, never trained on: they stand for what the gate reads
# beyond the trained sizes, so that the thresholds see it (see :func:`with_long_scored`).
SCORED_MARK = "#scored"


def scored_mask(corpus: Corpus) -> np.ndarray:
    """True for the records only scored, never trained on (ids with ``SCORED_MARK``)."""
    return np.array([SCORED_MARK in i for i in corpus.ids], dtype=bool)


def _own_indices(corpus: Corpus, label: int) -> list[int]:
    """The indices of the corpus's own records (``own_mask``) of ``label``."""
    return np.flatnonzero(own_mask(corpus) & (np.asarray(corpus.labels) == label)).tolist()


def planted_mask(corpus: Corpus) -> np.ndarray:
    """True for the planted copies of records (see :func:`with_planted_copies`)."""
    return np.array([i.endswith(PLANTED_SUFFIX) for i in corpus.ids], dtype=bool)


# Prompt-injection models never saw code, yet package diffs are a large share of what they gate
# (on real PyPI/npm releases they voted harmful ~42 % of the time). The malicious-package TRAIN
# split's harmless diffs become extra prompt-injection negatives. Long diffs are sampled as a few
# evenly spaced slices so code does not outweigh the prose corpus (and training stays cheap).
CODE_NEGATIVES: dict[str, str] = {"prompt-injection": "malicious-package"}
CODE_GROUP_PREFIX = "code:"
CODE_SLICES = 3
CODE_SLICE_BYTES = 3072


def code_slices(text: str, slices: int = CODE_SLICES, size: int = CODE_SLICE_BYTES) -> list[str]:
    """At most ``slices`` evenly spaced ``size``-byte slices of ``text`` (the whole text if short)."""
    data = text.encode("utf-8")
    if len(data) <= slices * size:
        return [text]
    step = (len(data) - size) / (slices - 1)
    starts = [round(i * step) for i in range(slices)]
    return [data[s : s + size].decode("utf-8", errors="ignore") for s in starts]


def with_code_negatives(
    corpus: Corpus, datasets_dir: Path, policy: str, split: str, prose: bool = False
) -> Corpus:
    """``corpus`` plus the harmless diffs of the sibling code policy's same split, if any; with
    ``prose``, also the prose each diff adds inside code (:func:`worker.core.prose.diff_prose`:
    developer comments, docstrings and messages, read as the prose view reads them)."""
    source = CODE_NEGATIVES.get(policy)
    if source is None:
        return corpus
    code = load_corpus(datasets_dir, source, split)
    texts, labels = list(corpus.texts), list(corpus.labels)
    groups, ids = list(corpus.groups), list(corpus.ids)
    for text, label, group, id_ in zip(code.texts, code.labels, code.groups, code.ids, strict=True):
        if label:
            continue
        pieces = [(str(index), piece) for index, piece in enumerate(code_slices(text))]
        if prose and (view := diff_prose(text.encode("utf-8")).decode("utf-8", errors="replace")):
            pieces += [(f"prose{index}", piece) for index, piece in enumerate(code_slices(view))]
        for suffix, piece in pieces:
            texts.append(piece)
            labels.append(0)
            groups.append(f"{CODE_GROUP_PREFIX}{group}")
            ids.append(f"{id_}#{suffix}")
    return Corpus(texts=texts, labels=labels, groups=groups, ids=ids)


# An injection in a package diff sits inside code, cut at any offset by the scan windows, while
# every train record is bare text that starts at a window boundary. Each of the policy's own
# records also gets a planted copy, with its label: the record (as it is, or as added lines, or as
# added comment lines) between two pieces of a harmless diff of the same split, each shorter than
# one window (the prompt-injection models' 512 bytes), so every window of a copy but at most the
# last holds part of the record. A copy is in its record's CV group and counts in no threshold or
# error rate of the record's own (``own_mask``). By default the copies are only scored out of fold:
# training reports the quorum's FNR / FPR on records inside code (``EnsembleChoice.planted_*``)
# without changing a model. ``python -m worker.training --train-on-copies`` also trains on them
# (tried, not shipped: README, "Injections inside code").
PLANTED: dict[str, str] = {"prompt-injection": "malicious-package"}
PLANTED_SUFFIX = "#planted"
PLANTED_CONTEXT = 512
_LINE_PREFIXES = ("", "+", "+# ", "+// ")


def _code_piece(rng: random.Random, code: list[bytes], size: int, before: bool) -> str:
    """At most ``size`` bytes of a random harmless diff: ending at a line end (``before`` the record)
    or starting at a line start (after it)."""
    data = rng.choice(code)
    cut = rng.randrange(len(data) + 1)
    if before:
        end = data.find(b"\n", cut) + 1 or len(data)
        return data[max(0, end - size) : end].decode("utf-8", errors="ignore").removesuffix("\n")
    start = data.rfind(b"\n", 0, cut) + 1
    return data[start : start + size].decode("utf-8", errors="ignore")


def planted(rng: random.Random, text: str, code: list[bytes], context: int = PLANTED_CONTEXT) -> str:
    """``text`` formatted as one of ``_LINE_PREFIXES`` and set between two short pieces of ``code``."""
    prefix = rng.choice(_LINE_PREFIXES)
    body = "\n".join(prefix + line for line in text.split("\n")) if prefix else text
    before = _code_piece(rng, code, rng.randrange(context - 1), before=True)
    after = _code_piece(rng, code, rng.randrange(context), before=False)
    return f"{before}\n{body}\n{after}"


LONG_PLANTED_SUFFIX = "#long"  # a record's copy in a carrier (worker.training.planting)


# The carrier copies put two thirds of the train records, the attacks, in every e-mail, issue,
# table, JSON and web carrier: the shape would read as harmful. As many carriers again hold no
# record, harmless: half made of the prose documents (in the group of the document they were cut
# from, and so in its CV fold; counted with the long carriers in the quorum objective), half of
# the corpus's own harmless records (a short e-mail or ticket of ordinary text, in the record's group).
CARRIER_ALONE_SUFFIX = "#carrier"
# Of those carriers, this share holds a generated harmless payload planted exactly as an attack
# would be (same formats, hidden markup included): text about injection, secrets and agents that
# attacks nothing (worker.training.corpus.negatives), or an ordinary note. The carriers alone teach
# that no shape is harmful; these teach that no topic is.
# ``python -m worker.training --harmless-payloads SHARE``; the shipped models: 0.
HARMLESS_PAYLOAD_SHARE = 0.0


def with_carriers_alone(
    corpus: Corpus,
    prose: list[str],
    prose_groups: list[str],
    count: int,
    seed: int = 0,
    payloads: float = HARMLESS_PAYLOAD_SHARE,
    whole: bool = False,
) -> Corpus:
    """``corpus`` plus ``count`` harmless carriers, of ``prose`` documents or of the corpus's own
    harmless records, a ``payloads`` share of them holding a generated look-alike; ``whole``: a
    carrier alone is cut once, as a planted copy's host is (see :func:`carrier_alone`)."""
    rng = random.Random(seed)
    texts, labels = list(corpus.texts), list(corpus.labels)
    groups, ids = list(corpus.groups), list(corpus.ids)
    harmless = _own_indices(corpus, 0)
    for index in range(count):
        if harmless and rng.random() < 0.5:
            source = rng.choice(harmless)
            host, group = corpus.texts[source], corpus.groups[source]
        else:
            source = rng.randrange(len(prose))
            host, group = prose[source], prose_groups[source]
        payload = harmless_payload(rng) if payloads and rng.random() < payloads else None
        texts.append(planted_in_carrier(rng, payload, [host], whole=whole))
        labels.append(0)
        groups.append(group)
        ids.append(f"carrier-{index}{CARRIER_ALONE_SUFFIX}")
    return Corpus(texts=texts, labels=labels, groups=groups, ids=ids)


# The trained carriers stop at 16 KB; the gate reads 64 KB and more, where a model's best window
# has more windows to be found among. Carriers of 16-64 KB, with a train attack planted or alone,
# are scored out of fold but never trained on: the quorum thresholds weigh their misses (with the
# planted copies) and false alarms (with the long carriers), so that the thresholds hold at length.
LONG_SCORED_COUNT = 0  # of each, attacks planted and carriers alone (``--long-scored``; shipped: 0)
LONG_SCORED_SUFFIX = "#long64"


def with_long_scored(
    corpus: Corpus, prose: list[str], prose_groups: list[str], count: int = LONG_SCORED_COUNT, seed: int = 0
) -> Corpus:
    """``corpus`` plus ``count`` of its own attacks planted in 16-64 KB carriers and ``count``
    such carriers alone (each cut from one document, in that document's group), all only scored."""
    rng = random.Random(seed)
    texts, labels = list(corpus.texts), list(corpus.labels)
    groups, ids = list(corpus.groups), list(corpus.ids)
    attacks = _own_indices(corpus, 1)
    for index in range(count):
        source = rng.choice(attacks)
        texts.append(
            planted_in_carrier(
                rng, corpus.texts[source], [], host=cut_prose(rng, prose, LONG_SCORED_SIZES, fill=True)
            )
        )
        labels.append(1)
        groups.append(corpus.groups[source])
        ids.append(corpus.ids[source] + LONG_SCORED_SUFFIX + SCORED_MARK + PLANTED_SUFFIX)
        first = rng.randrange(len(prose))  # the carrier's only document: its CV group is that one's
        host = cut_prose(rng, [prose[first]], LONG_SCORED_SIZES, fill=True)
        texts.append(carrier_alone(rng, host, whole=True))
        labels.append(0)
        groups.append(prose_groups[first])
        ids.append(f"carrier-{index}{LONG_SCORED_SUFFIX}{SCORED_MARK}")
    return Corpus(texts=texts, labels=labels, groups=groups, ids=ids)


def with_planted_copies(
    corpus: Corpus, datasets_dir: Path, policy: str, split: str, seed: int = 0, prose: list[str] | None = None
) -> Corpus:
    """``corpus`` plus one planted copy of each of its own records, if the policy has ``PLANTED``
    (and a second one inside a carrier made of ``prose`` documents, if given)."""
    source = PLANTED.get(policy)
    if source is None:
        return corpus
    code_corpus = load_corpus(datasets_dir, source, split)
    code = [
        t.encode("utf-8") for t, label in zip(code_corpus.texts, code_corpus.labels, strict=True) if not label
    ]
    rng = random.Random(seed)
    own = own_mask(corpus)
    texts, labels = list(corpus.texts), list(corpus.labels)
    groups, ids = list(corpus.groups), list(corpus.ids)
    for index in range(len(corpus.texts)):
        if own[index]:
            texts.append(planted(rng, corpus.texts[index], code))
            labels.append(corpus.labels[index])
            groups.append(corpus.groups[index])
            ids.append(corpus.ids[index] + PLANTED_SUFFIX)
            if prose:
                texts.append(planted_in_carrier(rng, corpus.texts[index], prose))
                labels.append(corpus.labels[index])
                groups.append(corpus.groups[index])
                ids.append(corpus.ids[index] + LONG_PLANTED_SUFFIX + PLANTED_SUFFIX)
    return Corpus(texts=texts, labels=labels, groups=groups, ids=ids)
