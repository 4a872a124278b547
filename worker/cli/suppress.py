"""``canary review suppress | suppressions | unsuppress``: record, list and revoke suppressions."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer


def _runtime() -> Any:
    from pydantic import ValidationError

    from worker.pipeline.runtime import build_runtime
    from worker.settings import Settings

    try:
        return build_runtime(Settings(), role="reviewer")
    except ValidationError as exc:
        typer.echo(f"canary: invalid settings: {exc.errors()[0]['msg']}", err=True)
        raise typer.Exit(2) from exc


def _row(s: Any) -> dict[str, Any]:
    return {
        "id": s.id,
        "policy": s.policy_id,
        "rule": s.rule_id,
        "path": s.path,
        "sha256": s.content_sha256,
        "by": s.created_by,
        "reason": s.reason,
        "from_gate": s.from_gate,
        "expires": s.expires_at.isoformat(),
        "revoked": s.revoked_at.isoformat() if s.revoked_at else None,
    }


def suppress_command(
    gate_id: Annotated[str, typer.Argument(help="A gate a reviewer allowed.")],
    by: Annotated[str, typer.Option("--by", help="Reviewer name (audited).")],
    reason: Annotated[str, typer.Option("--reason", help="Why this evidence is benign.")],
    expires: Annotated[str, typer.Option("--expires", help="How long it holds (90d, 12h).")] = "90d",
) -> None:
    """Suppress the exact pre-check evidence of a gate you allowed: its rule, file and the sha256 of
    its hunk. Later gates whose only evidence it is are not blocked by the pre-check."""
    from worker.pipeline.stuck import parse_duration
    from worker.pipeline.suppressions import SuppressionError, suppress_gate

    try:
        days = parse_duration(expires) / 86400
        made = suppress_gate(_runtime(), gate_id, by, reason, days)
    except (ValueError, SuppressionError) as exc:
        typer.echo(f"canary: {exc}", err=True)
        raise typer.Exit(2) from exc
    for s in made:
        typer.echo(
            f"{s.id}\t{s.rule_id}\t{s.path or '-'}\t{s.content_sha256[:16]}\tuntil {s.expires_at.date()}"
        )


def suppressions_command(
    include_all: Annotated[bool, typer.Option("--all", help="Expired and revoked ones too.")] = False,
    json_out: Annotated[bool, typer.Option("--json", help="One JSON object per line.")] = False,
) -> None:
    """List suppressions in force (with --all: every one ever recorded)."""
    from worker.pipeline.suppressions import list_suppressions

    for s in list_suppressions(_runtime(), include_all):
        row = _row(s)
        typer.echo(json.dumps(row) if json_out else "\t".join(str(v) for v in row.values()))


def unsuppress_command(
    suppression_id: Annotated[
        str, typer.Argument(help="Suppression id (from `canary review suppressions`).")
    ],
    by: Annotated[str, typer.Option("--by", help="Reviewer name (audited).")],
) -> None:
    """Revoke a suppression: its evidence blocks again from the next gate on (within 30 s)."""
    from worker.pipeline.suppressions import SuppressionError, revoke

    try:
        s = revoke(_runtime(), suppression_id, by)
    except SuppressionError as exc:
        typer.echo(f"canary: {exc}", err=True)
        raise typer.Exit(2) from exc
    typer.echo(f"{s.id}\trevoked by {by}")
