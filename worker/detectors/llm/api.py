"""The three chat wire formats (OpenAI-compatible, Anthropic Messages, Ollama) and one client over them.

A :class:`ChatAPI` knows one API's path, headers, request body and response
shape; :class:`ChatClient` owns the ``httpx.Client`` (transport injectable, so
tests pass ``httpx.MockTransport`` or point ``base_url`` at a loopback server),
the retry policy, the key (read from the environment variable *named* in the
options, at construction) and the prices, and returns a :class:`Completion`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import httpx

from worker.core.errors import ConfigError, DetectorError
from worker.core.models import ErrorKind
from worker.detectors.llm.http import RetryPolicy, post_json
from worker.detectors.llm.options import ClientOptions

JsonMode = Literal["schema", "object", "off"]
VERDICT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"verdict": {"type": "string", "enum": ["harmful", "harmless"]}},
    "required": ["verdict"],
    "additionalProperties": False,
}


@dataclass(frozen=True)
class Completion:
    """The answer text of one call (reasoning/thinking is never part of it) and what it cost."""

    text: str
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens


def _malformed(backend: str, what: str) -> DetectorError:
    return DetectorError(f"{backend}: response {what}", ErrorKind.malformed)


def _count(value: Any) -> int:
    return value if isinstance(value, int) and value >= 0 else 0


def _usage(data: dict[str, Any]) -> dict[str, Any]:
    usage = data.get("usage")
    return usage if isinstance(usage, dict) else {}


class ChatAPI:
    """One wire format. Subclasses fill in the class attributes and three methods."""

    name: ClassVar[str]
    path: ClassVar[str]
    default_base_url: ClassVar[str]
    default_key_env: ClassVar[str | None] = None
    key_always_required: ClassVar[bool] = False
    own_options: ClassVar[frozenset[str]] = frozenset()

    def headers(self, key: str | None, opts: ClientOptions) -> dict[str, str]:
        return {"Authorization": f"Bearer {key}"} if key else {}

    def body(self, system: str, user: str, opts: ClientOptions, json_mode: JsonMode) -> dict[str, Any]:
        raise NotImplementedError

    def parse(self, data: dict[str, Any], backend: str) -> Completion:
        raise NotImplementedError


class OpenAIChat(ChatAPI):
    """``POST {base_url}/chat/completions``: OpenAI, vLLM, Together, Groq, Ollama's ``/v1``."""

    name = "openai"
    path = "/chat/completions"
    default_base_url = "https://api.openai.com/v1"
    default_key_env = "OPENAI_API_KEY"
    own_options = frozenset({"token_param"})

    def body(self, system: str, user: str, opts: ClientOptions, json_mode: JsonMode) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": opts.model,
            "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}],
            opts.token_param: opts.max_tokens,
        }
        if opts.temperature is not None:
            body["temperature"] = opts.temperature
        if json_mode == "schema":
            schema = {"name": "verdict", "strict": True, "schema": VERDICT_SCHEMA}
            body["response_format"] = {"type": "json_schema", "json_schema": schema}
        elif json_mode == "object":
            body["response_format"] = {"type": "json_object"}
        return body

    def parse(self, data: dict[str, Any], backend: str) -> Completion:
        choices = data.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            raise _malformed(backend, "has no choices")
        message = choices[0].get("message")
        message = message if isinstance(message, dict) else {}
        text = message.get("content")
        if not isinstance(text, str):
            text = message.get("refusal")  # structured-output refusals: off protocol, still checked
        if not isinstance(text, str):
            raise _malformed(backend, "has no message content")
        usage = _usage(data)
        return Completion(text, _count(usage.get("prompt_tokens")), _count(usage.get("completion_tokens")))


class AnthropicMessages(ChatAPI):
    """``POST {base_url}/v1/messages`` with ``x-api-key`` and ``anthropic-version``."""

    name = "anthropic"
    path = "/v1/messages"
    default_base_url = "https://api.anthropic.com"
    default_key_env = "ANTHROPIC_API_KEY"
    key_always_required = True
    own_options = frozenset({"anthropic_version"})

    def headers(self, key: str | None, opts: ClientOptions) -> dict[str, str]:
        return {"x-api-key": key or "", "anthropic-version": opts.anthropic_version}

    def body(self, system: str, user: str, opts: ClientOptions, json_mode: JsonMode) -> dict[str, Any]:
        # The Messages API has no portable JSON mode; the protocol is enforced by parse_verdict.
        body: dict[str, Any] = {
            "model": opts.model,
            "max_tokens": opts.max_tokens,
            "system": system,
            "messages": [{"role": "user", "content": user}],
        }
        if opts.temperature is not None:
            body["temperature"] = opts.temperature
        return body

    def parse(self, data: dict[str, Any], backend: str) -> Completion:
        blocks = data.get("content")
        if not isinstance(blocks, list):
            raise _malformed(backend, "has no content blocks")
        texts = [b.get("text") for b in blocks if isinstance(b, dict) and b.get("type") == "text"]
        text = "".join(t for t in texts if isinstance(t, str))
        if len(texts) == 0 or not all(isinstance(t, str) for t in texts):
            raise _malformed(backend, "has no text content")
        usage = _usage(data)
        prompt = sum(
            _count(usage.get(k))
            for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
        )
        return Completion(text, prompt, _count(usage.get("output_tokens")))


class OllamaChat(ChatAPI):
    """``POST {base_url}/api/chat`` (Ollama native), ``stream: false``, ``format`` = JSON schema."""

    name = "ollama"
    path = "/api/chat"
    default_base_url = "http://localhost:11434"
    own_options = frozenset({"num_ctx"})

    def body(self, system: str, user: str, opts: ClientOptions, json_mode: JsonMode) -> dict[str, Any]:
        # Ollama silently truncates prompts longer than num_ctx; size it to the window so
        # every fenced byte is actually read (~2 characters per token, worst case, + room).
        num_ctx = opts.num_ctx or max(4096, (opts.window_chars + len(system)) // 2 + 1024 + opts.max_tokens)
        options: dict[str, Any] = {"num_predict": opts.max_tokens, "num_ctx": num_ctx}
        if opts.temperature is not None:
            options["temperature"] = opts.temperature
        body: dict[str, Any] = {
            "model": opts.model,
            "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}],
            "stream": False,
            "options": options,
        }
        if json_mode == "schema":
            body["format"] = VERDICT_SCHEMA
        elif json_mode == "object":
            body["format"] = "json"
        return body

    def parse(self, data: dict[str, Any], backend: str) -> Completion:
        message = data.get("message")
        text = message.get("content") if isinstance(message, dict) else None
        if not isinstance(text, str):
            raise _malformed(backend, "has no message content")
        return Completion(text, _count(data.get("prompt_eval_count")), _count(data.get("eval_count")))


APIS: dict[str, type[ChatAPI]] = {api.name: api for api in (OpenAIChat, AnthropicMessages, OllamaChat)}


class ChatClient:
    """A configured connection to one model behind one API."""

    def __init__(
        self,
        api: ChatAPI,
        opts: ClientOptions,
        *,
        name: str,
        timeout_s: float,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        misplaced = sorted(
            key
            for other in APIS.values()
            if other.name != api.name
            for key in other.own_options - api.own_options
            if key in opts.model_fields_set
        )
        if misplaced:
            raise ConfigError(
                f"detector {name!r}: option(s) {', '.join(misplaced)} do not apply to {api.name}"
            )
        self.api = api
        self.opts = opts
        self.backend = f"{api.name}:{opts.model}"
        self.retry = RetryPolicy(opts.retries, opts.backoff_s, opts.backoff_max_s, opts.retry_after_max_s)
        self._http = httpx.Client(
            base_url=opts.base_url or api.default_base_url,
            headers=api.headers(_read_key(api, opts, name), opts),
            timeout=httpx.Timeout(opts.timeout or timeout_s),
            transport=transport,
            follow_redirects=False,
        )

    def complete(self, system: str, user: str, json_mode: JsonMode = "off") -> Completion:
        """One call: request, retries, parse, price. Raises only detector errors."""
        body = self.api.body(system, user, self.opts, json_mode)
        data = post_json(self._http, self.api.path, body, backend=self.backend, retry=self.retry)
        done = self.api.parse(data, self.backend)
        cost = (
            done.input_tokens * self.opts.price_per_1k_input
            + done.output_tokens * self.opts.price_per_1k_output
        ) / 1000
        return Completion(done.text, done.input_tokens, done.output_tokens, cost)

    def close(self) -> None:
        self._http.close()

    def __repr__(self) -> str:
        return f"ChatClient({self.backend!r})"


def _read_key(api: ChatAPI, opts: ClientOptions, name: str) -> str | None:
    """The API key from the environment variable named by ``api_key_env``; never from YAML."""
    env = opts.api_key_env
    if env is None and (api.key_always_required or opts.base_url is None):
        env = api.default_key_env
    if env is None:
        return None
    key = os.environ.get(env, "").strip()
    if not key:
        raise ConfigError(f"detector {name!r}: environment variable {env} (api_key_env) is unset or empty")
    return key
