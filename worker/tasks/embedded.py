"""The same task graph, run in-process: the embedded default behind ``canary scan`` and ``scan()``."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING

from worker.pipeline.intake import Submitted, submit_artifact
from worker.pipeline.runtime import Runtime, attach_runtime, build_runtime
from worker.settings import Settings

if TYPE_CHECKING:
    from celery import Celery


class EmbeddedGate:
    """An eager Celery app plus its runtime: SQLite and folders unless configured otherwise.

    The app is built on first use: an artifact whose gates were all decided before (a second
    ``canary scan`` of the same file) is answered from the database without importing Celery.
    """

    def __init__(self, settings: Settings | None = None) -> None:
        from worker.adapters.compiled_cache import enable

        self.settings = settings or Settings()
        enable(self.settings.compiled_cache_dir)  # as create_app does: before any rule set compiles
        self.rt: Runtime = build_runtime(self.settings)
        self._app: Celery | None = None
        self._lock = threading.Lock()

    @property
    def app(self) -> Celery:
        """The eager Celery app, sharing this gate's runtime (built on first use)."""
        with self._lock:
            if self._app is None:
                from worker.tasks.app import create_app

                app = create_app(self.settings, eager=True)
                attach_runtime(app, self.rt)
                self._app = app
            return self._app

    def close(self) -> None:
        """Close the database connections now (SQLite then folds its write-ahead log back into
        the file), rather than whenever the collector finds the engine."""
        self.rt.repo.engine.dispose()

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
