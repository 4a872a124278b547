"""Exceptions of Canary Gate, under one root. Each survives a pickle round trip.

    CanaryError
    ├── ConfigError          a developer/operator mistake: refuse to start
    ├── StorageError         the object store failed
    ├── DatabaseError        the gate database refused a statement
    │   └── DatabaseUnavailableError   it could not be reached (a restart): retry later
    └── DetectorError        a detector failed; carries the ErrorKind of its invalid vote
        ├── DetectorTimeout
        └── DetectorCompromised

Detector failures never escape the detect task: they become invalid votes.
"""

from __future__ import annotations

from worker.core.models import ErrorKind


class CanaryError(Exception):
    """Root of every Canary Gate failure."""


class ConfigError(CanaryError):
    """Settings or policy are wrong; the process should refuse to start."""


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

    def __reduce__(self) -> tuple[type[DetectorError], tuple[str, str]]:
        return (type(self), (self.message, self.kind.value))


class DetectorTimeout(DetectorError):
    kind = ErrorKind.timeout


class DetectorCompromised(DetectorError):
    kind = ErrorKind.detector_compromised
