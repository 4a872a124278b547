"""Options of the model-backed detectors, as written under ``options:`` in a policy YAML.

Validated strictly (unknown keys are refused) when the detector is built, so a
typo stops the worker at start-up with a :class:`ConfigError` instead of
silently running with defaults. Error messages name the option and the
problem, never the value: a key pasted into YAML by mistake is not echoed.
"""

from __future__ import annotations

from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from worker.core.errors import ConfigError

OptionsT = TypeVar("OptionsT", bound="ClientOptions")


class ClientOptions(BaseModel):
    """What every model-backed detector accepts."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    model: str = Field(min_length=1)
    base_url: str | None = None
    api_key_env: str | None = Field(default=None, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    max_tokens: int = Field(default=20, gt=0)
    temperature: float | None = Field(default=0.0, ge=0)
    timeout: float | None = Field(default=None, gt=0)
    retries: int = Field(default=3, ge=0, le=10)
    backoff_s: float = Field(default=0.5, ge=0)
    backoff_max_s: float = Field(default=8.0, ge=0)
    retry_after_max_s: float = Field(default=30.0, ge=0)
    price_per_1k_input: float = Field(default=0.0, ge=0)
    price_per_1k_output: float = Field(default=0.0, ge=0)
    window_chars: int = Field(default=32_000, gt=0)
    overlap_chars: int = Field(default=2_000, ge=0)
    # API-specific (refused by the other APIs)
    token_param: Literal["max_tokens", "max_completion_tokens"] = "max_tokens"
    anthropic_version: str = "2023-06-01"
    num_ctx: int | None = Field(default=None, gt=0)

    @model_validator(mode="after")
    def _windows(self) -> ClientOptions:
        if self.overlap_chars >= self.window_chars:
            raise ValueError("overlap_chars must be smaller than window_chars")
        return self


class VerdictOptions(ClientOptions):
    """An ``openai`` / ``anthropic`` / ``ollama`` detector: the model answers the protocol itself."""

    json_mode: Literal["schema", "object", "off"] = "schema"


class ProbeOptions(ClientOptions):
    """A ``canary-probe`` detector: a sacrificial model writes a summary that is then inspected."""

    api: Literal["openai", "anthropic", "ollama"] = "ollama"
    max_tokens: int = Field(default=256, gt=0)
    window_chars: int = Field(default=8_000, gt=0)
    overlap_chars: int = Field(default=500, ge=0)


def parse_options(cls: type[OptionsT], name: str, options: dict[str, Any]) -> OptionsT:
    """Validate ``options`` for detector ``name``; a :class:`ConfigError` says what is wrong."""
    try:
        return cls.model_validate(options)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(part) for part in err['loc']) or 'options'}: {err['msg']}" for err in exc.errors()
        )
        hint = ""
        if any("key" in str(k).lower() and k != "api_key_env" for k in options):
            hint = " (put the key in an environment variable and name it with api_key_env)"
        raise ConfigError(f"detector {name!r}: invalid options: {problems}{hint}") from None
