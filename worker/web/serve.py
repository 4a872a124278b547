"""``canary serve``: the HTTP intake under uvicorn. Without tokens it listens on loopback only."""

from __future__ import annotations

import ipaddress
from typing import Annotated

import typer

DEFAULT_PORT = 8080


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def bind_host(host: str, tokens: list[str]) -> tuple[str, str | None]:
    """The address to listen on, and a warning when it differs from the one asked for."""
    if tokens or is_loopback(host):
        return host, None
    return "127.0.0.1", (
        "canary: no CANARY_API_TOKENS configured: the intake accepts anyone, so it listens on "
        f"127.0.0.1 only (asked for {host}); set CANARY_API_TOKENS=token[,token...] to serve others"
    )


def serve_command(
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="TCP port.")] = DEFAULT_PORT,
) -> None:
    """Serve the HTTP intake: POST /v1/artifacts, GET /v1/artifacts/{gate_id}, /healthz, /readyz.

    With the embedded default each artifact is gated in-process before the answer; with
    CANARY_BROKER_URL its gates are enqueued for the workers.
    """
    import logging

    import uvicorn

    from worker.cli.usage import load_settings, usage
    from worker.core.errors import ConfigError
    from worker.logs import configure_logging
    from worker.web.intake import create_intake_app

    settings = load_settings()
    configure_logging(logging.INFO)
    chosen, warning = bind_host(host, settings.api_token_list)
    if warning:
        typer.echo(warning, err=True)
    elif not settings.api_token_list:
        typer.echo(
            "canary: no CANARY_API_TOKENS configured: requests need no token (loopback only)", err=True
        )
    try:
        app = create_intake_app(settings)
    except ConfigError as exc:
        raise usage(str(exc)) from exc
    uvicorn.run(app, host=chosen, port=port, log_level="info", access_log=False)
