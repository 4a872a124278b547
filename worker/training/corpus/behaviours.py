"""The generated malicious-package training records: behaviour families and their look-alikes.

:mod:`.malware` writes the harmful packages, :mod:`.lookalikes` the harmless ones; each family or
look-alike of each registry is one CV group, so group-CV reads a family never seen in that
registry. Half the records carry a stretch of a real release diff (the harmless release records of
:mod:`.releases`) beside the generated files, so that a behaviour is learnt inside ordinary package
code and ordinary package code is not learnt as a behaviour.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from worker.training.corpus.lookalikes import LOOK_ALIKES, ci_publish, npm_harmless, pypi_harmless
from worker.training.corpus.malware import FAMILIES, ci_workflow, npm_harmful
from worker.training.corpus.malware_pypi import pypi_harmful
from worker.training.corpus.package_parts import Draw, Files, diff
from worker.training.corpus.releases import file_aligned
from worker.training.data import BEHAVIOURS_FILE

SOURCE = "written for this project (worker/training/corpus/malware.py, lookalikes.py) after publicly documented behaviour families"
LICENCE = "Apache-2.0 (written for this project)"
GROUP_PREFIX = "generated-package:"
FILE_NAME = BEHAVIOURS_FILE.name
PER_KIND = 60  # records per family or look-alike and registry
Writers = dict[str, Callable[[Draw, str], Files]]  # a kind's package writer per registry


def _with_filler(d: Draw, text: str, fillers: list[str]) -> str:
    """Half the records: a stretch of a real release diff (2-24 KB, from a file's header) beside."""
    if not fillers or d.rng.random() < 0.5:
        return text
    size = int(2048 * 12 ** d.rng.random())
    piece = file_aligned(d.rng, d.pick(fillers).encode("utf-8"), size).decode("utf-8", "ignore")
    return piece + text if d.rng.random() < 0.5 else text + piece


def behaviour_records(fillers: list[str], seed: int = 0) -> list[dict[str, Any]]:
    """The generated records: ``PER_KIND`` of each harmful family and each look-alike per registry,
    and as many CI workflows that dump secrets and that publish as registries document."""
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

    harmful: Writers = {"npm": npm_harmful, "pypi": pypi_harmful}
    harmless: Writers = {"npm": npm_harmless, "pypi": pypi_harmless}
    writers: list[tuple[str, str, Writers]] = (
        [(family, "harmful", harmful) for family in FAMILIES]
        + [
            ("ci-secrets", "harmful", {"github": lambda d, _: ci_workflow(d)}),
            ("ci-publish", "harmless", {"github": lambda d, _: ci_publish(d)}),
        ]
        + [(kind, "harmless", harmless) for kind in LOOK_ALIKES]
    )
    for kind, label, by_registry in writers:
        for _ in range(PER_KIND):
            for ecosystem, write in by_registry.items():
                d = Draw(rng)
                add(kind, label, ecosystem, write(d, kind), d)
    return records
