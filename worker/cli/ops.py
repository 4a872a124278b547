"""Operations: ``canary worker``, ``beat``, ``flower``, ``sweep`` (and ``metrics``, ``eval``)."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping
from typing import Annotated

import typer

from worker.adapters.metrics import DEFAULT_PORT as METRICS_PORT
from worker.cli.usage import JsonOpt, chosen_policies, load_settings, usage


def celery(argv: list[str]) -> None:
    import logging

    from worker.core.errors import ConfigError
    from worker.logs import configure_logging
    from worker.tasks.app import create_app

    settings = load_settings()
    configure_logging(logging.INFO, stdlib=True)
    if not sys.stderr.isatty():  # Python warnings (Celery's root warning) as JSON lines too
        from worker.logs import capture_warnings_as_json

        capture_warnings_as_json()
    try:
        celery_app = create_app(settings, eager=False)
    except ConfigError as exc:
        raise usage(str(exc)) from exc
    celery_app.start(argv)


def worker(
    ctx: typer.Context,
    concurrency: Annotated[int, typer.Option(help="Worker processes (prefork pool).")] = 2,
    loglevel: Annotated[str, typer.Option(help="Celery log level.")] = "INFO",
    queues: Annotated[
        str | None,
        typer.Option(
            "--queues",
            "-Q",
            help="Comma-separated queues to serve (default: all, the gate queue and canary.fetch).",
        ),
    ] = None,
) -> None:
    """Start a Celery worker (prefork pool) consuming the gate and registry fetch queues."""
    from policies import available_policies

    chosen_policies(available_policies())  # every shipped policy checked whole before taking work
    settings = load_settings()
    served = queues or f"{settings.task_queue},{settings.fetch_queue}"
    if not [q for q in served.split(",") if q.strip()]:
        raise usage("--queues names no queue")
    argv = ["worker", f"--concurrency={concurrency}", "--pool=prefork", f"--loglevel={loglevel}"]
    events = ["-E"] if settings.task_events else []
    quiet = [] if sys.stdout.isatty() else ["--quiet"]  # no text banner in a JSON-lines log
    celery([*quiet, *argv, "-Q", served, *events, *ctx.args])


def beat(ctx: typer.Context) -> None:
    """Start Celery beat (schedules the stuck-gate sweeper)."""
    celery(["beat", "--loglevel=INFO", *ctx.args])


def flower(ctx: typer.Context) -> None:
    """Start Flower (basic auth from FLOWER_BASIC_AUTH; without any auth it listens on 127.0.0.1 only)."""
    argv = flower_argv(list(ctx.args), os.environ)
    if argv[1:] != list(ctx.args):
        typer.echo(
            "canary: Flower has no authentication (set FLOWER_BASIC_AUTH=user:password, or pass "
            "--basic-auth or --auth-provider): listening on 127.0.0.1 only",
            err=True,
        )
    celery(argv)


FLOWER_AUTH_OPTIONS = ("--basic-auth", "--basic_auth", "--auth", "--auth_provider", "--auth-provider")


def flower_argv(args: list[str], env: Mapping[str, str]) -> list[str]:
    """Flower's argv: secure by default. Flower can revoke and terminate tasks, so without basic
    auth or an OAuth provider (options or Flower's own ``FLOWER_*`` variables) it is bound to the
    loopback interface unless an address is given explicitly."""
    authenticated = any(env.get(var) for var in ("FLOWER_BASIC_AUTH", "FLOWER_AUTH", "FLOWER_AUTH_PROVIDER"))
    authenticated = authenticated or any(a.split("=", 1)[0] in FLOWER_AUTH_OPTIONS for a in args)
    addressed = bool(env.get("FLOWER_ADDRESS")) or any(a.split("=", 1)[0] == "--address" for a in args)
    if authenticated or addressed:
        return ["flower", *args]
    return ["flower", "--address=127.0.0.1", *args]


def sweep(json_out: JsonOpt = False) -> None:
    """Run the stuck-gate sweeper once."""
    from worker.pipeline.runtime import build_runtime
    from worker.pipeline.sweeper import sweep as run_sweep
    from worker.tasks.app import create_app

    settings = load_settings()
    rt = build_runtime(settings, role="sweeper")
    if settings.embedded:
        from worker.tasks.embedded import EmbeddedGate

        gate = EmbeddedGate(settings)
        counts = run_sweep(gate.rt, gate.run)
    else:
        celery_app = create_app(settings, eager=False)
        counts = run_sweep(
            rt,
            lambda gid: celery_app.send_task("canary.precheck", (gid,), ignore_result=True),
            lambda fid: celery_app.send_task("canary.fetch", (fid,), ignore_result=True),
        )
    typer.echo(json.dumps(counts) if json_out else ", ".join(f"{k}={v}" for k, v in counts.items()))


def eval_command(
    paths: Annotated[list[str], typer.Argument(help="Labelled JSONL files (.jsonl or .jsonl.gz).")],
    policy: Annotated[str, typer.Option("--policy", "-p", help="Policy id or YAML path.")],
    detectors: Annotated[
        list[str] | None,
        typer.Option(
            "--detectors",
            "-d",
            help="A setup: detector names from the quorum (rules,lexical), optionally name=path.yaml "
            "for another policy file. Repeat for several rows. Default: the policy as shipped.",
        ),
    ] = None,
    json_out: Annotated[
        bool, typer.Option("--json", help="One JSON object per setup, one per line.")
    ] = False,
    limit: Annotated[int | None, typer.Option("--limit", min=1, help="Only the first N records.")] = None,
) -> None:
    """Score detector setups on labelled records through the full gate (review counts as blocked)."""
    from worker.core.errors import ConfigError
    from worker.evaluation.command import evaluate
    from worker.evaluation.inputs import EvalInputError

    try:
        scores = evaluate(policy, detectors or [None], paths, limit, progress=True)
    except EvalInputError as exc:
        raise usage(exc.message) from None
    except ConfigError as exc:
        raise usage(str(exc)) from None
    if scores[0].skipped:
        typer.echo(f"canary: skipped {scores[0].skipped} records of other policies", err=True)
    if json_out:
        for score in scores:
            typer.echo(json.dumps(score.summary()))
        return
    from worker.evaluation.tables import print_scores

    print_scores(scores)


def metrics(
    port: Annotated[
        int | None,
        typer.Option(help=f"Port to serve /metrics on [default: CANARY_METRICS_PORT or {METRICS_PORT}]."),
    ] = None,
    addr: Annotated[
        str | None, typer.Option(help="Address to bind [default: CANARY_METRICS_ADDR or 127.0.0.1].")
    ] = None,
    once: Annotated[bool, typer.Option("--once", help="Print the metrics once to stdout and exit.")] = False,
) -> None:
    """Serve the gate metrics (read from the gate database) for Prometheus."""
    import threading

    from worker.adapters.metrics import settings_registry, start_exporter

    settings = load_settings()
    if once:
        from prometheus_client import generate_latest

        registry = settings_registry(settings)
        typer.echo(generate_latest(registry).decode(), nl=False)
        return
    chosen = port or settings.metrics_port or METRICS_PORT
    addr = addr or settings.metrics_addr
    try:
        start_exporter(settings, chosen, addr)
    except OSError as exc:
        typer.echo(
            f"canary: cannot serve metrics on {addr or settings.metrics_addr}:{chosen}: {exc}", err=True
        )
        raise typer.Exit(1) from None
    typer.echo(f"serving gate metrics on http://{addr or settings.metrics_addr}:{chosen}/metrics", err=True)
    threading.Event().wait()
