"""Read the labelled JSON-lines corpora (``{policy}/{split}.jsonl.gz``) as plain records."""

from __future__ import annotations

import gzip
import json
import os
from dataclasses import dataclass
from pathlib import Path

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
