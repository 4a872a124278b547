"""Read the labelled JSON-lines corpora (``{policy}/{split}.jsonl.gz``) as plain records."""

from __future__ import annotations

import gzip
import json
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

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
    env = os.environ.get("CANARY_DATASETS_DIR")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[3] / "shared" / "datasets"


def load_corpus(datasets_dir: Path, policy: str, split: str) -> Corpus:
    """Load one split; texts stay in memory only, never written anywhere."""
    path = datasets_dir / policy / f"{split}.jsonl.gz"
    texts: list[str] = []
    labels: list[int] = []
    groups: list[str] = []
    ids: list[str] = []
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        for line in handle:
            record = json.loads(line)
            texts.append(record["text"])
            labels.append(1 if record["label"] == "harmful" else 0)
            groups.append(record["group"])
            ids.append(record["id"])
    return Corpus(texts=texts, labels=labels, groups=groups, ids=ids)


def own_mask(corpus: Corpus) -> np.ndarray:
    """True for the policy's own records, False for borrowed code negatives."""
    return np.array([not g.startswith(CODE_GROUP_PREFIX) for g in corpus.groups])


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


def with_code_negatives(corpus: Corpus, datasets_dir: Path, policy: str, split: str) -> Corpus:
    """``corpus`` plus the harmless diffs of the sibling code policy's same split, if any."""
    source = CODE_NEGATIVES.get(policy)
    if source is None:
        return corpus
    code = load_corpus(datasets_dir, source, split)
    texts, labels = list(corpus.texts), list(corpus.labels)
    groups, ids = list(corpus.groups), list(corpus.ids)
    for text, label, group, id_ in zip(code.texts, code.labels, code.groups, code.ids, strict=True):
        if label:
            continue
        for index, piece in enumerate(code_slices(text)):
            texts.append(piece)
            labels.append(0)
            groups.append(f"{CODE_GROUP_PREFIX}{group}")
            ids.append(f"{id_}#{index}")
    return Corpus(texts=texts, labels=labels, groups=groups, ids=ids)
