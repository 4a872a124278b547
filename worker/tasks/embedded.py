"""The same task graph, run in-process: the embedded default behind ``canary scan`` and ``scan()``."""

from __future__ import annotations

from collections.abc import Sequence

from celery import Celery

from worker.pipeline.intake import Submitted, submit_artifact
from worker.pipeline.runtime import Runtime, runtime_for
from worker.settings import Settings
from worker.tasks.app import create_app


class EmbeddedGate:
    """An eager Celery app plus its runtime: SQLite and folders unless configured otherwise."""

    def __init__(self, settings: Settings | None = None) -> None:
        self.settings = settings or Settings()
        self.app: Celery = create_app(self.settings, eager=True)
        self.rt: Runtime = runtime_for(self.app)

    def run(self, gate_id: str) -> None:
        self.app.tasks["canary.precheck"].apply_async((gate_id,))

    def submit(self, data: bytes, policies: Sequence[str], source: str = "") -> Submitted:
        """Gate ``data`` under every policy now; returns the decided gates."""
        submitted = submit_artifact(self.rt, data, policies, self.run, source=source)
        stale = [g.id for g in submitted.gates if not g.terminal]
        if not stale:
            return submitted
        with self.rt.reader.lending(submitted.gates[0].object_key, data):
            for gate_id in stale:  # left over from an interrupted earlier run: finish it now
                self.run(gate_id)
        fresh = self.rt.repo.get_many(g.id for g in submitted.gates)
        return Submitted(submitted.submission, [fresh[g.id] for g in submitted.gates], submitted.created)


_DEFAULT: EmbeddedGate | None = None


def default_gate() -> EmbeddedGate:
    global _DEFAULT
    if _DEFAULT is None:
        _DEFAULT = EmbeddedGate()
    return _DEFAULT
