"""LLM detectors (``kind: openai | anthropic | ollama``): a model answers the policy's tiny protocol.

Each call sends the policy as the system prompt, with a fresh random canary
sentence planted in it, and one window of the artifact as the user message,
inside a fence with a fresh random nonce (:mod:`worker.core.fence`). The reply
must be exactly ``{"verdict": "harmful"|"harmless"}``:

- off-protocol replies (prose, reasoning, code fences, extra keys) are passed
  through raw, so the coordinator's :func:`~worker.core.detector.cast_vote`
  marks the vote ``malformed``; reasoning text is never read;
- a reply that repeats the canary sentence raises :class:`DetectorCompromisedError`
  (the artifact steered the detector into leaking its instructions);
- timeouts raise :class:`DetectorTimeoutError`; HTTP and connection failures, once
  retries are spent, raise ``BackendError`` (kind ``unavailable``).

Everything is scanned: a long artifact is cut into overlapping windows, one
call each (an e-mail's base64 or quoted-printable text parts are sent decoded
too). The verdict is harmful if any window is harmful; any failed window fails
the whole vote; coverage counts only windows actually answered, and tokens and
cost are summed.
"""

from __future__ import annotations

from typing import Any, ClassVar

import httpx
import structlog

from worker.core.detector import Artifact, parse_verdict, verdict_output
from worker.core.errors import DetectorCompromisedError
from worker.core.fence import (
    build_system_prompt,
    fence_artifact,
    leaked,
    neutralise_fence_tags,
    new_canary_sentence,
    new_nonce,
)
from worker.core.mail import decoded_text_parts
from worker.core.models import Answer
from worker.core.policy import HarmPolicy
from worker.core.segment import coverage_of, segment_spans
from worker.detectors.llm.api import APIS, ChatClient, Completion
from worker.detectors.llm.options import ClientOptions, VerdictOptions, parse_options

log = structlog.get_logger(__name__)

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


class LLMDetector:
    """A model answering the verdict protocol over one chat API. Use a subclass per API."""

    api_name: ClassVar[str]

    def __init__(
        self,
        *,
        name: str,
        timeout_s: float = 30.0,
        transport: httpx.BaseTransport | None = None,
        **options: Any,
    ) -> None:
        self.name = name
        self.opts = parse_options(VerdictOptions, name, options)
        self.client = ChatClient(
            APIS[self.api_name](), self.opts, name=name, timeout_s=timeout_s, transport=transport
        )
        self.backend = self.client.backend

    def answer(self, artifact: Artifact, policy: HarmPolicy) -> Answer:
        windows = artifact_windows(artifact.data, self.opts.window_chars, self.opts.overlap_chars)
        tally = WindowTally(artifact.size, self.opts)
        harmful = False
        for number, (span, text) in enumerate(windows, start=1):
            completion = self._ask(text, policy, f"window {number}/{len(windows)}")
            tally.add(span, completion)
            verdict = parse_verdict(completion.text, policy.protocol)
            if verdict is None:
                log.info("llm_off_protocol", detector=self.name, backend=self.backend, window=number)
                return tally.answer(completion.text)
            harmful = harmful or verdict == "harmful"
        return tally.answer(verdict_output("harmful" if harmful else "harmless"))

    def _ask(self, text: str, policy: HarmPolicy, where: str) -> Completion:
        nonce = new_nonce()
        canary = new_canary_sentence()
        body, collisions = neutralise_fence_tags(text)
        if collisions:
            log.warning("fence_tag_neutralised", detector=self.name, count=collisions, where=where)
        completion = self.client.complete(
            build_system_prompt(policy, canary, nonce=nonce),
            fence_artifact(body, nonce),
            json_mode=self.opts.json_mode,
        )
        if leaked(completion.text, canary):
            log.warning("llm_canary_leaked", detector=self.name, backend=self.backend, where=where)
            raise DetectorCompromisedError(
                f"{self.backend}: output repeats the system-prompt canary ({where})"
            )
        return completion

    def close(self) -> None:
        self.client.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, backend={self.backend!r})"


class OpenAIDetector(LLMDetector):
    """``kind: openai``: any OpenAI-compatible ``/v1/chat/completions`` endpoint."""

    api_name = "openai"


class AnthropicDetector(LLMDetector):
    """``kind: anthropic``: the Anthropic Messages API."""

    api_name = "anthropic"


class OllamaDetector(LLMDetector):
    """``kind: ollama``: Ollama's native ``/api/chat``."""

    api_name = "ollama"


DETECTORS: dict[str, type[LLMDetector]] = {
    "openai": OpenAIDetector,
    "anthropic": AnthropicDetector,
    "ollama": OllamaDetector,
}
