"""``canary review audit`` and ``canary review export``: the review trail read back from the CLI."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import click
import typer

SinceOpt = Annotated[
    str | None, typer.Option("--since", help="Only from then on: a duration back (2h, 7d) or an ISO date.")
]


def _runtime_and_since(since: str | None) -> tuple[Any, Any]:
    from pydantic import ValidationError

    from worker.pipeline.review_records import parse_since
    from worker.pipeline.runtime import build_runtime
    from worker.settings import Settings

    try:
        settings = Settings()
        when = parse_since(since) if since else None
    except (ValueError, ValidationError) as exc:
        typer.echo(f"canary: {exc}", err=True)
        raise typer.Exit(2) from exc
    return build_runtime(settings, role="reviewer"), when


def audit_command(
    gate_id: Annotated[str | None, typer.Argument(help="One gate's trail (default: every gate).")] = None,
    since: SinceOpt = None,
    json_out: Annotated[bool, typer.Option("--json", help="One JSON object per line.")] = False,
) -> None:
    """Print the audit trail: every transition, when, by whom (exit 1 for an unknown gate)."""
    from worker.pipeline.review_records import audit_events

    rt, when = _runtime_and_since(since)
    events = audit_events(rt, gate_id, when)
    if gate_id and not events and rt.repo.get(gate_id) is None:
        typer.echo(f"canary: gate {gate_id} is unknown", err=True)
        raise typer.Exit(1)
    for e in events:
        row = {
            "gate_id": e.gate_id,
            "at": e.at.isoformat(),
            "event": e.event,
            "actor": e.actor,
            "detail": e.detail,
        }
        typer.echo(json.dumps(row) if json_out else "\t".join(str(v) for v in row.values()))


def export_command(
    out: Annotated[Path, typer.Argument(help="JSON-lines file to write (- for stdout).")],
    since: SinceOpt = None,
) -> None:
    """Write every gate a person decided as a labelled record (id, text, label, source, policy,
    review, report): the format `canary eval` and training read."""
    from worker.pipeline.review_records import reviewed_records

    rt, when = _runtime_and_since(since)
    count = 0
    with click.open_file(str(out), "w", encoding="utf-8") as fh:
        for record in reviewed_records(rt, when):
            fh.write(json.dumps(record, ensure_ascii=False) + "\n")
            count += 1
    typer.echo(f"exported {count} reviewed items", err=True)
