"""The generated malicious-package training records: behaviour families and their look-alikes.

:mod:`.malware` writes the harmful packages, :mod:`.lookalikes` the harmless ones; each family or
look-alike of each registry is one CV group, so group-CV reads a family never seen in that
registry. Half the records carry a stretch of a real release diff (the harmless release records of
:mod:`.releases`) beside the generated files, so that a behaviour is learnt inside ordinary package
code and ordinary package code is not learnt as a behaviour.
"""

from __future__ import annotations

import random
from typing import Any

from worker.training.corpus.lookalikes import LOOK_ALIKES, ci_publish, npm_harmless, pypi_harmless
from worker.training.corpus.malware import FAMILIES, Draw, Files, ci_workflow, diff, npm_harmful, pypi_harmful
from worker.training.corpus.releases import file_aligned

SOURCE = "written for this project (worker/training/corpus/malware.py, lookalikes.py) after publicly documented behaviour families"
LICENCE = "Apache-2.0 (written for this project)"
GROUP_PREFIX = "generated-package:"
FILE_NAME = "package-behaviours.jsonl.gz"
PER_FAMILY = 60  # harmful records per family and ecosystem
PER_LOOK_ALIKE = 60  # harmless records per look-alike kind and ecosystem


def _with_filler(d: Draw, text: str, fillers: list[str]) -> str:
    """Half the records: a stretch of a real release diff (2-24 KB, from a file's header) beside."""
    if not fillers or d.rng.random() < 0.5:
        return text
    size = int(2048 * 12 ** d.rng.random())
    piece = file_aligned(d.rng, d.pick(fillers).encode("utf-8"), size).decode("utf-8", "ignore")
    return piece + text if d.rng.random() < 0.5 else text + piece


def behaviour_records(fillers: list[str], seed: int = 0) -> list[dict[str, Any]]:
    """The generated records: ``PER_FAMILY`` harmful per family and ecosystem, ``PER_LOOK_ALIKE``
    harmless per look-alike and ecosystem, and CI workflows dumping secrets."""
    rng = random.Random(seed)
    records: list[dict[str, Any]] = []

    def add(kind: str, label: str, ecosystem: str, files: Files, d: Draw) -> None:
        records.append(
            {
                "id": f"extra:{kind}:{ecosystem}:{len(records)}",
                "text": _with_filler(d, diff(files), fillers),
                "label": label,
                "policy": "malicious-package",
                "source": SOURCE,
                "license": LICENCE,
                "group": f"{GROUP_PREFIX}{kind}:{ecosystem}",
                "split": "train",
                "how": f"{kind} ({ecosystem})",
            }
        )

    for family in FAMILIES:
        for _ in range(PER_FAMILY):
            d = Draw(rng)
            add(family, "harmful", "npm", npm_harmful(d, family), d)
            d = Draw(rng)
            add(family, "harmful", "pypi", pypi_harmful(d, family), d)
    for _ in range(PER_FAMILY):
        d = Draw(rng)
        add("ci-secrets", "harmful", "github", ci_workflow(d), d)
    for _ in range(PER_LOOK_ALIKE):
        d = Draw(rng)
        add("ci-publish", "harmless", "github", ci_publish(d), d)
    for kind in LOOK_ALIKES:
        for _ in range(PER_LOOK_ALIKE):
            d = Draw(rng)
            add(kind, "harmless", "npm", npm_harmless(d, kind), d)
            d = Draw(rng)
            add(kind, "harmless", "pypi", pypi_harmless(d, kind), d)
    return records
