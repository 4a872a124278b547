"""Exceptions of Canary Gate, under one root. Each survives a pickle round trip (Celery
pickles task errors), extra attributes included.

    CanaryError
    ├── ConfigError                 a mistake in the set-up (settings, policy, detector options):
    │   │                           fix it, retrying cannot help; the process refuses to start
    │   └── PolicyError             a policy cannot be found, read or validated, or changed
    │                               since its gate was submitted
    ├── UsageError                  a mistake in one request: say it in one line, go on
    │   ├── InputError              an input given to a producer cannot be read
    │   ├── EvalInputError          ``canary eval`` was given records or a setup it cannot use
    │   └── ReviewError             the gate is unknown or not waiting for review
    ├── StorageError                the object store or database failed (may work on a retry)
    ├── ArtifactCorruptError        stored bytes do not hash to the gate's sha256: never classified
    ├── RegistryError               a release could not be fetched, verified or opened
    └── DetectorError               a detector could not answer; carries the ErrorKind of its vote
        ├── DetectorTimeoutError    it ran past its budget
        ├── DetectorCompromisedError  its answer shows the artifact took it over
        └── BackendError            a model API answered an error status or could not be reached

Mistakes (``ConfigError``, ``UsageError``) are kept apart from runtime failures (the rest).
The classes outside this module are defined where they are raised and subclass one here:
``PolicyError`` (:mod:`policies.loader`), ``InputError`` (:mod:`producers.files`),
``EvalInputError`` (:mod:`worker.evaluation.inputs`), ``ReviewError`` (:mod:`worker.pipeline.review`),
``ArtifactCorruptError`` (:mod:`worker.pipeline.steps`), ``RegistryError`` (:mod:`producers.registry`),
``BackendError`` (:mod:`worker.detectors.llm.http`).
Detector failures never escape the detect task: they become invalid votes.
"""

from __future__ import annotations

from typing import Any

from worker.core.models import ErrorKind


class CanaryError(Exception):
    """Root of every Canary Gate failure."""


class ConfigError(CanaryError):
    """Settings or policy are wrong; the process should refuse to start."""


class UsageError(CanaryError):
    """One request (an input, a command's arguments) is wrong; the rest goes on."""


class StorageError(CanaryError):
    """Reading or writing artifact bytes or gate rows failed."""


class DetectorError(CanaryError):
    """A detector could not answer; ``kind`` says which invalid vote it becomes."""

    kind: ErrorKind = ErrorKind.exception

    def __init__(self, message: str = "", kind: ErrorKind | str | None = None) -> None:
        super().__init__(message)
        self.message = message
        if kind is not None:
            self.kind = ErrorKind(kind)

    def __reduce__(self) -> tuple[Any, ...]:
        # The message, then every attribute: its own kind, a subclass's extra fields.
        return (type(self), (self.message,), dict(vars(self)))


class DetectorTimeoutError(DetectorError):
    """The detector ran past its time budget."""

    kind = ErrorKind.timeout


class DetectorCompromisedError(DetectorError):
    """The detector's answer shows the artifact took it over (a leaked canary, a broken fence)."""

    kind = ErrorKind.detector_compromised
