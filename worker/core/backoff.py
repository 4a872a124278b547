"""Exponential backoff with jitter: the wait before a retry, shared by every HTTP client."""

from __future__ import annotations

import random


def jittered_backoff(attempt: int, backoff_s: float, backoff_max_s: float) -> float:
    """A uniform draw from ``[b/2, b]``, ``b = min(backoff_max_s, backoff_s * 2**attempt)`` (0-based)."""
    base = min(backoff_max_s, backoff_s * 2**attempt)
    return random.uniform(base / 2, base)
