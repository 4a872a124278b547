"""The ``canary`` process's start-up without the cyclic garbage collector.

Starting ``canary`` imports about a thousand modules: a few hundred thousand long-lived objects
(classes, SQLAlchemy and pydantic machinery, compiled patterns) and next to no garbage. The
collector walks them again and again as they pile up, and once more as the interpreter exits:
about 0.1 and 0.25 of the ~1.1 CPU-s a second ``canary scan`` of a small file cost (issue #24).
The entry point pauses it (``pause``); a command resumes it once its imports and set-up are
done (``resume``, ``setting_up``), first moving what exists into the permanent generation
(``gc.freeze``), so that later collections, the one at exit included, walk only what the work
itself allocates. A frozen object is never collected, so what start-up opens is closed
explicitly (``EmbeddedGate.close``). Nothing is paused while an artifact is read or gated, and
an application that imports ``worker.cli`` (a test's ``CliRunner``) keeps its collector as it
is: only ``pause`` (called by the entry points) turns this on.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

_state = {"entry": False, "paused": False}


def pause() -> None:
    """The ``canary`` entry point starts: no collection until a command resumes."""
    if not _state["paused"] and not gc.isenabled():
        return  # the host turned the collector off: leave it so
    gc.disable()
    _state["entry"] = _state["paused"] = True


def resume() -> None:
    """Start-up is done: freeze what it built and collect again (no-op unless paused)."""
    if _state["paused"]:
        _state["paused"] = False
        gc.freeze()
        gc.enable()


@contextmanager
def setting_up() -> Iterator[None]:
    """A command's own set-up (its lazy imports, its policies, its runtime), paused in the
    ``canary`` process only."""
    if not _state["entry"] or not gc.isenabled():
        yield
        return
    pause()
    try:
        yield
    finally:
        resume()
