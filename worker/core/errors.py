"""Exceptions of Canary Gate, under one root. Each survives a pickle round trip (Celery
pickles task errors), extra attributes included.

    CanaryError
    ├── ConfigError                   a mistake in the set-up (settings, policy, options): fix
    │   │                             it, a retry cannot help; the process refuses to start
    │   └── PolicyError               a policy cannot be found, read or validated, or changed
    │                                 since its gate was submitted (policies.loader)
    ├── UsageError                    a mistake in one request: say it in one line, go on
    │   ├── InputError                an input named on the command line cannot be read (producers.files)
    │   ├── RowError                  one row of a table cannot be read (producers.tables)
    │   ├── FieldError                a --field mapping is malformed; also a ValueError (producers.tables)
    │   ├── EvalInputError            `canary eval` got records or a setup it cannot use (worker.evaluation)
    │   ├── ReviewError               the gate is unknown or not waiting for review (worker.pipeline.review)
    │   ├── BadRequestError           an intake request cannot be gated as sent (worker.web.body)
    │   ├── UnauthorizedError         an intake request carries no accepted token (worker.web.intake)
    │   ├── KeyReusedError            an Idempotency-Key came back with another request (worker.web)
    │   ├── SuppressionError          a gate whose evidence cannot be suppressed (worker.pipeline.suppressions)
    │   ├── IdentityError             a reviewer name, password or token is unacceptable
    │   │                             (worker.adapters.reviewers)
    │   └── SecondReviewerError       the reviewer who asked for a release approved it too
    │                                 (worker.pipeline.two_person)
    ├── StorageError                  the object store failed (may work on a retry)
    ├── DatabaseError                 the gate database refused a statement
    │   └── DatabaseUnavailableError  it could not be reached (a restart): retry later
    ├── ArtifactCorruptError          stored bytes do not hash to the gate's sha256: never
    │                                 classified (worker.pipeline.steps)
    ├── RegistryError                 a release could not be fetched, verified or opened
    │   │                             (producers.registry)
    │   └── RegistryUnavailableError  the registry could not be reached or answered 429/5xx:
    │                                 retry later (producers.registry)
    ├── MailError                     a mailbox cannot be read: address, login, TLS, folder
    │                                 (producers.mail)
    └── DetectorError                 a detector could not answer; carries its vote's ErrorKind
        ├── DetectorTimeoutError      it ran past its budget
        ├── DetectorCompromisedError  its answer shows the artifact took it over
        └── BackendError              a model API answered an error or could not be reached
                                      (worker.detectors.llm.http)

Mistakes (``ConfigError``, ``UsageError``) are kept apart from runtime failures (the rest).
A class is defined where it is raised (the module in parentheses; here if none) and subclasses
one of the classes here; tests/shell/test_exception_tree.py checks every product exception.
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
    """Reading or writing artifact bytes failed."""


class DatabaseError(CanaryError):
    """A statement on the gate database failed (the repository translates the driver's errors)."""


class DatabaseUnavailableError(DatabaseError):
    """The gate database could not be reached or dropped the connection: worth a retry."""


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
