"""The one error of the registry producer."""

from __future__ import annotations

from worker.core.errors import CanaryError


class RegistryError(CanaryError):
    """A release could not be fetched, verified or opened; nothing was gated for it."""
