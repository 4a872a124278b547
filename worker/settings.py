"""One ``Settings`` object, prefix ``CANARY_``, built once at an entry point.

With nothing set, the embedded default is used: SQLite and local folders under
``CANARY_DATA_DIR`` and an in-process (eager) run of the same Celery tasks.
"""

from __future__ import annotations

from functools import cached_property
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, SecretStr, ValidationError, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from worker.core.errors import ConfigError


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="CANARY_", extra="ignore")

    broker_url: str | None = None
    result_backend: str | None = None
    database_url: str | None = None
    s3_endpoint_url: str | None = None
    object_store: Literal["auto", "s3", "local"] = "auto"
    artifact_bucket: str = "canary-artifacts"
    quarantine_bucket: str = "canary-quarantine"
    data_dir: Path = Path(".canary")

    allowed_queue: str = "canary.allowed"
    review_queue: str = "canary.review"
    task_queue: str = "canary.gate"
    # Registry releases submitted by reference are fetched and diffed by a worker serving this
    # queue (worker.pipeline.fetch); `canary worker -Q` picks the queues a host serves.
    fetch_queue: str = "canary.fetch"

    gate_deadline_s: float = Field(default=900.0, gt=0)
    max_attempts: int = Field(default=3, ge=1)
    requeue_after_s: float = Field(default=120.0, gt=0)
    soft_time_limit_s: float = Field(default=60.0, gt=0)
    hard_time_limit_s: float = Field(default=90.0, gt=0)
    visibility_timeout_s: float | None = None
    sweep_interval_s: float = Field(default=30.0, gt=0)
    result_expires_s: int = Field(default=86400, gt=0)
    # Compiled Hyperscan databases, kept between processes (worker.adapters.compiled_cache):
    # default $XDG_CACHE_HOME/canary (~/.cache/canary); CANARY_COMPILED_CACHE=false turns it off.
    cache_dir: Path | None = None
    compiled_cache: bool = True
    metrics_port: int = 0
    # The exporter answers anyone who can reach it (no auth): loopback unless told otherwise.
    metrics_addr: str = "127.0.0.1"
    # Per-stage histograms and detector error counts (worker.adapters.stage_metrics), written by
    # every process to files in this folder (default: $CANARY_DATA_DIR/metrics).
    stage_metrics: bool = True
    metrics_dir: Path | None = None
    preload: bool = True
    batch_size: int = Field(default=32, ge=1, le=1000)
    # Celery task events cost each task ~3 broker publishes (measured: ~15% of a lone gate's
    # latency). Off by default: Flower switches them on at run time (its ``enable_events``);
    # set true to have workers send them from start.
    task_events: bool = False

    # Allowed messages carry an HMAC-SHA256 signature with this key (worker.core.signature); unset,
    # a random key is kept in ``<data_dir>/signing.key`` (mode 0600) for one host's use.
    signing_key: SecretStr | None = None
    # The review app (worker.web.review): the key its session cookies are signed with (unset: a
    # random key per process, sessions end on restart), the header a reverse proxy puts the
    # signed-in reviewer's name in (unset: the app's own log-in), and the CLI's reviewer token.
    review_secret: SecretStr | None = None
    review_trusted_header: str | None = None
    review_token: SecretStr | None = None
    # HTTP intake (``canary serve``, worker.web.intake): bearer tokens, comma-separated; with none
    # the server listens on loopback only. Bodies over ``max_request_bytes`` are refused (413).
    api_tokens: str = ""
    max_request_bytes: int = Field(default=64 * 1024 * 1024, ge=1)
    # jsonl:/csv: inputs: which fields are a row's content and source (producers.tables), e.g.
    # "content=body,source=id"; `--field` on the command line replaces it.
    table_fields: str = ""
    # imaps:// inputs (producers.mail): the variable holding the password, a CA file to verify the
    # server against (default: the system's), and the largest message gated.
    mail_password_env: str = "CANARY_MAIL_PASSWORD"
    mail_ca_file: str | None = None
    mail_max_bytes: int = Field(default=64 * 1024 * 1024, ge=1)
    # pypi:/npm: inputs (producers.registry): a mirror; unset, pip's and npm's own configuration.
    pypi_index_url: str | None = None
    npm_registry: str | None = None
    # Politeness per worker process (producers.registry.polite): requests in flight per host,
    # requests per second per host (average; 0: no limit), the client's retries of
    # 429/5xx/connection errors, and the fetch task's own retries (with backoff) once those are spent.
    fetch_per_host: int = Field(default=4, ge=1)
    fetch_rate_per_host: float = Field(default=20.0, ge=0)
    fetch_client_retries: int = Field(default=3, ge=0)
    fetch_task_retries: int = Field(default=3, ge=0)
    # Training only (worker.training): the labelled datasets, and the cache of fetched corpus texts.
    datasets_dir: Path | None = None
    corpus_cache: Path | None = None

    @classmethod
    def load(cls, **overrides: Any) -> Settings:
        """The settings from the environment. The one home of settings errors: anything invalid is
        a ``ConfigError`` (``invalid settings: ...``) that entry points turn into a clear refusal."""
        try:
            return cls(**overrides)
        except ValidationError as exc:
            raise ConfigError(f"invalid settings: {exc.errors()[0]['msg']}") from None

    @model_validator(mode="after")
    def _check(self) -> Settings:
        if self.hard_time_limit_s <= self.soft_time_limit_s:
            raise ValueError("hard_time_limit_s must exceed soft_time_limit_s")
        if self.visibility_timeout_s is not None and self.visibility_timeout_s <= self.hard_time_limit_s:
            raise ValueError("visibility_timeout_s must exceed hard_time_limit_s")
        if self.result_backend and not self.broker_url:
            raise ValueError("CANARY_RESULT_BACKEND needs CANARY_BROKER_URL")
        return self

    @property
    def cache_root(self) -> Path:
        """``CANARY_CACHE_DIR``, else ``$XDG_CACHE_HOME/canary`` (``~/.cache/canary``)."""
        if self.cache_dir is not None:
            return self.cache_dir
        import os

        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        return Path(base) / "canary"

    @property
    def compiled_cache_dir(self) -> Path | None:
        """Where compiled rule databases are kept, or None when the cache is off."""
        return self.cache_root / "hyperscan" if self.compiled_cache else None

    @property
    def embedded(self) -> bool:
        """No broker configured: run the task graph in-process."""
        return self.broker_url is None

    @property
    def api_token_list(self) -> list[str]:
        return [t.strip() for t in self.api_tokens.split(",") if t.strip()]

    @property
    def visibility_timeout(self) -> float:
        return self.visibility_timeout_s or self.hard_time_limit_s + 60.0

    @property
    def use_s3(self) -> bool:
        if self.object_store == "auto":
            return self.s3_endpoint_url is not None
        return self.object_store == "s3"

    @cached_property
    def sqlalchemy_url(self) -> str:
        if self.database_url:
            return self.database_url
        return f"sqlite:///{(self.data_dir / 'canary.db').resolve()}"

    def require_broker(self) -> str:
        if not self.broker_url:
            raise ConfigError(
                "CANARY_BROKER_URL is not set: `canary submit`/`worker` need a broker "
                "(e.g. redis://127.0.0.1:6379/0). Use `canary scan` for the embedded default."
            )
        return self.broker_url

    def backend_url(self) -> str:
        return self.result_backend or self.require_broker()
