"""The errors of the registry producer."""

from __future__ import annotations

from worker.core.errors import CanaryError


class RegistryError(CanaryError):
    """A release could not be fetched, verified or opened; nothing was gated for it."""


class RegistryUnavailableError(RegistryError):
    """The registry could not be reached or answered 429/5xx after the client's own retries:
    a later try may work (the fetch task retries it with backoff), unlike a 404 or a bad digest."""
