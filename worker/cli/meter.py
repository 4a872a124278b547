"""A batch's progress on one line of a terminal: done/total, rate and time left (``canary submit``).

Written to stderr only when stderr is a terminal, redrawn at most every ``every_s`` seconds and
erased at the end, so piped output and CI logs stay as they were.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TextIO


def describe_progress(done: int, total: int | None, elapsed_s: float, what: str = "inputs") -> str:
    """``"37/120 inputs, 2.5/s, 33s left"``; the rate and time left once there is one to give."""
    count = f"{done}/{total} {what}" if total is not None else f"{done} {what}"
    if done <= 0 or elapsed_s <= 0:
        return count
    rate = done / elapsed_s
    parts = [count, f"{rate:.1f}/s" if rate >= 0.95 else f"{60 * rate:.1f}/min"]
    if total is not None and done < total:
        parts.append(f"{_duration((total - done) / rate)} left")
    return ", ".join(parts)


def _duration(seconds: float) -> str:
    whole = max(0, round(seconds))
    if whole < 60:
        return f"{whole}s"
    minutes, secs = divmod(whole, 60)
    if minutes < 60:
        return f"{minutes}m{secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


class BatchMeter:
    """``update(done)`` as items finish; ``close()`` erases the line. Silent off a terminal."""

    def __init__(
        self,
        total: int | None,
        stream: TextIO,
        clock: Callable[[], float] = time.monotonic,
        every_s: float = 0.2,
    ) -> None:
        self.total, self.stream, self.clock, self.every_s = total, stream, clock, every_s
        self.enabled = stream.isatty()
        self.started = clock()
        self.drawn_at: float | None = None
        self.width = 0

    def update(self, done: int) -> None:
        if not self.enabled:
            return
        now = self.clock()
        if self.drawn_at is not None and now - self.drawn_at < self.every_s and done != self.total:
            return
        self.drawn_at = now
        line = describe_progress(done, self.total, now - self.started)
        self.stream.write("\r" + line.ljust(self.width))
        self.stream.flush()
        self.width = len(line)

    def close(self) -> None:
        if self.enabled and self.drawn_at is not None:
            self.stream.write("\r" + " " * self.width + "\r")
            self.stream.flush()
