"""What every detector that asks a chat model shares: its options, its client, its windows.

``ChatDetector`` parses the detector's options, builds the `ChatClient` for the API they name and
walks the artifact in overlapping windows (every byte covered, an e-mail's encoded text parts read
decoded too); ``WindowTally`` adds up what the windows answered. The verdict detectors
(`worker.detectors.llm.chat`) and the canary probe (`worker.detectors.llm.probe`) differ only in
what they ask each window and how they read the reply.
"""

from __future__ import annotations

from typing import Any, ClassVar, Generic, TypeVar

import httpx

from worker.core.mail import decoded_text_parts
from worker.core.models import Answer
from worker.core.segment import coverage_of, segment_spans
from worker.detectors.llm.api import APIS, ChatClient, Completion
from worker.detectors.llm.options import ClientOptions, parse_options

OptionsT = TypeVar("OptionsT", bound=ClientOptions)

Span = tuple[int, int]


def _snap(data: bytes, start: int, end: int) -> Span:
    """Widen ``[start, end)`` to whole UTF-8 characters (a window never cuts one in half)."""
    while start > 0 and (data[start] & 0xC0) == 0x80:
        start -= 1
    while end < len(data) and (data[end] & 0xC0) == 0x80:
        end += 1
    return start, end


def _byte_windows(data: bytes, window: int, overlap: int) -> list[tuple[Span, str]]:
    spans = [_snap(data, start, end) for start, end in segment_spans(len(data), window, overlap)]
    return [((s, e), data[s:e].decode("utf-8", errors="replace")) for s, e in spans]


def artifact_windows(data: bytes, window: int, overlap: int) -> list[tuple[Span | None, str]]:
    """Overlapping byte windows covering all of ``data``, each with its decoded text; then, for an
    e-mail, windows of its base64 or quoted-printable text parts decoded (span ``None``: what the
    reader sees of bytes already covered, so they add to tokens and cost, not to coverage)."""
    windows: list[tuple[Span | None, str]] = list(_byte_windows(data, window, overlap))
    for part in decoded_text_parts(data):
        windows += [(None, text) for _, text in _byte_windows(part, window, overlap)]
    return windows


class WindowTally:
    """What the windows answered so far: spans, tokens and cost."""

    def __init__(self, total: int, opts: ClientOptions) -> None:
        self.total = total
        self.opts = opts
        self.spans: list[Span] = []
        self.tokens = 0
        self.cost_usd = 0.0

    def add(self, span: Span | None, completion: Completion) -> None:
        if span is not None:
            self.spans.append(span)
        self.tokens += completion.tokens
        self.cost_usd += completion.cost_usd

    def answer(self, output: str, score: float | None = None) -> Answer:
        coverage = coverage_of(self.spans, self.total, self.opts.window_chars, self.opts.overlap_chars)
        return Answer(
            output=output, coverage=coverage, tokens=self.tokens, cost_usd=self.cost_usd, score=score
        )


class ChatDetector(Generic[OptionsT]):
    """A detector over one chat API: ``options_type`` parses its options, ``api`` names the API."""

    options_type: ClassVar[type[ClientOptions]]

    def __init__(
        self,
        *,
        name: str,
        timeout_s: float = 30.0,
        transport: httpx.BaseTransport | None = None,
        **options: Any,
    ) -> None:
        self.name = name
        self.opts: OptionsT = parse_options(self.options_type, name, options)  # type: ignore[assignment]
        self.client = ChatClient(
            APIS[self.api()](), self.opts, name=name, timeout_s=timeout_s, transport=transport
        )
        self.backend = self.client.backend

    def api(self) -> str:
        """The name of the chat API this detector calls (a key of ``APIS``)."""
        raise NotImplementedError

    def windows(self, data: bytes) -> list[tuple[Span | None, str]]:
        """The artifact's windows at this detector's window size and overlap."""
        return artifact_windows(data, self.opts.window_chars, self.opts.overlap_chars)
