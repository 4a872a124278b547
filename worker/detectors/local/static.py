"""A configurable fixed-answer detector, for tests, drills and the coordination benchmark.

Not part of any shipped policy's ensemble: it exists so an operator can check
what the gate does with a detector that answers ``output`` (valid or not),
slowly (``delay_s``), partially (``coverage``) or by raising (``fail``).
"""

from __future__ import annotations

import time
from typing import Any

from worker.core.detector import Artifact
from worker.core.errors import DetectorError
from worker.core.models import Answer, Coverage
from worker.core.policy import HarmPolicy


class StaticDetector:
    backend = "static"

    def __init__(
        self,
        name: str = "static",
        output: str = '{"verdict": "harmless"}',
        delay_s: float = 0.0,
        coverage: float = 1.0,
        fail: str | None = None,
        **_: Any,
    ) -> None:
        self.name = name
        self.output = output
        self.delay_s = delay_s
        self.coverage = coverage
        self.fail = fail

    def answer(self, artifact: Artifact, policy: HarmPolicy) -> Answer:
        if self.delay_s:
            time.sleep(self.delay_s)
        if self.fail:
            raise DetectorError(self.fail)
        scanned = int(artifact.size * self.coverage)
        return Answer(output=self.output, coverage=Coverage(total_bytes=artifact.size, scanned_bytes=scanned))
