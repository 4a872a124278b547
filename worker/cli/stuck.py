"""``canary stuck``: open gates past a threshold, the stage each is stuck in; requeue or review them."""

from __future__ import annotations

import getpass
import json
from typing import Annotated, Any

import typer


def stuck_command(
    older_than: Annotated[
        str, typer.Option("--older-than", help="Untouched for at least this long (90s, 10m, 2h).")
    ] = "10m",
    json_out: Annotated[bool, typer.Option("--json", help="One JSON object per line.")] = False,
    requeue_them: Annotated[
        bool, typer.Option("--requeue", help="Send each one on again (audited).")
    ] = False,
    review_them: Annotated[
        bool, typer.Option("--to-review", help="Send each open one to human review (audited).")
    ] = False,
    by: Annotated[str, typer.Option("--by", help="Operator name for the audit trail.")] = "",
) -> None:
    """Open gates untouched past --older-than, with their stage: waiting for pre-check, in
    pre-check, detectors k of n voted, callback not run, decided but not published; and registry
    releases waiting for fetch (their fetch id in the first column).

    Exit 0 when none is stuck, 1 when some are (after acting on them with --requeue/--to-review).
    """
    from pydantic import ValidationError

    from worker.pipeline.runtime import build_runtime
    from worker.pipeline.stuck import parse_duration, requeue, stuck_gates, to_review
    from worker.settings import Settings

    if requeue_them and review_them:
        typer.echo("canary: choose one of --requeue or --to-review", err=True)
        raise typer.Exit(2)
    try:
        seconds = parse_duration(older_than)
        settings = Settings()
    except (ValueError, ValidationError) as exc:
        typer.echo(f"canary: {exc}", err=True)
        raise typer.Exit(2) from exc
    rt = build_runtime(settings, role="operator")
    found = stuck_gates(rt, seconds)
    for item in found:
        row: dict[str, Any] = item.as_dict()
        typer.echo(json.dumps(row) if json_out else _line(row))
    operator = by or getpass.getuser()
    if found and requeue_them:
        n = requeue(rt, found, operator, *_enqueuers(settings))
        typer.echo(f"requeued {n}", err=True)
    if found and review_them:
        typer.echo(f"sent to review {to_review(rt, found, operator)}", err=True)
    raise typer.Exit(1 if found else 0)


def _line(row: dict[str, Any]) -> str:
    return "\t".join(
        [
            row["gate_id"],
            row["policy"],
            row["stage"],
            f"attempts={row['attempts']}",
            f"age={_age(row['age_s'])}",
            f"idle={_age(row['idle_s'])}",
            f"last={row['last_actor']} {row['last_event']}".strip(),
        ]
    )


def _age(seconds: float) -> str:
    s = int(seconds)
    if s >= 3600:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    if s >= 60:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s}s"


def _enqueuers(settings: Any) -> tuple[Any, Any]:
    """How to send a gate (and a release fetch: only with a broker) on again."""
    if settings.embedded:
        from worker.tasks.embedded import EmbeddedGate

        gate = EmbeddedGate(settings)
        return gate.run, None
    from worker.tasks.app import create_app

    app = create_app(settings, eager=False)
    return (
        lambda gid: app.send_task("canary.precheck", (gid,), ignore_result=True),
        lambda fid: app.send_task("canary.fetch", (fid,), ignore_result=True),
    )
