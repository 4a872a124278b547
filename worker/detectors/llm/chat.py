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

from typing import ClassVar

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
from worker.core.models import Answer
from worker.core.policy import HarmPolicy
from worker.detectors.llm.api import Completion
from worker.detectors.llm.base import ChatDetector, WindowTally
from worker.detectors.llm.options import VerdictOptions

log = structlog.get_logger(__name__)


class LLMDetector(ChatDetector[VerdictOptions]):
    """A model answering the verdict protocol over one chat API. Use a subclass per API."""

    api_name: ClassVar[str]
    options_type = VerdictOptions

    def api(self) -> str:
        return self.api_name

    def answer(self, artifact: Artifact, policy: HarmPolicy) -> Answer:
        windows = self.windows(artifact.data)
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
