"""``canary review suppress | suppressions | unsuppress``: record, list and revoke suppressions."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer


def _runtime(settings: Any = None) -> Any:
    from pydantic import ValidationError

    from worker.pipeline.runtime import build_runtime
    from worker.settings import Settings

    try:
        return build_runtime(settings or Settings(), role="reviewer")
    except ValidationError as exc:
        typer.echo(f"canary: invalid settings: {exc.errors()[0]['msg']}", err=True)
        raise typer.Exit(2) from exc


def _reviewer(by: str | None) -> tuple[Any, str]:
    """The settings and the reviewer running the command, found as `canary review decide` finds them."""
    from worker.cli.usage import load_settings
    from worker.web.review.commands import cli_reviewer

    settings = load_settings()
    return settings, cli_reviewer(settings, by)


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
    reason: Annotated[str, typer.Option("--reason", help="Why this evidence is benign.")],
    expires: Annotated[str, typer.Option("--expires", help="How long it holds (90d, 12h).")] = "90d",
    by: Annotated[str | None, typer.Option("--by", hidden=True, help="Deprecated: must name you.")] = None,
) -> None:
    """Suppress the exact pre-check evidence of a gate you allowed: its rule, file and the sha256 of
    its hunk. Later gates whose only evidence it is are not blocked by the pre-check.

    You are the reviewer `canary review decide` names: CANARY_REVIEW_TOKEN's owner, or the one
    mapped to your OS user (`canary review add-user NAME --os-user USER`)."""
    from worker.pipeline.stuck import parse_duration
    from worker.pipeline.suppressions import SuppressionError, suppress_gate

    settings, person = _reviewer(by)
    try:
        days = parse_duration(expires) / 86400
        made = suppress_gate(_runtime(settings), gate_id, person, reason, days)
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
    by: Annotated[str | None, typer.Option("--by", hidden=True, help="Deprecated: must name you.")] = None,
) -> None:
    """Revoke a suppression: its evidence blocks again from the next gate on (within 30 s). You are
    the reviewer `canary review decide` names (CANARY_REVIEW_TOKEN's owner, or your OS user's)."""
    from worker.pipeline.suppressions import SuppressionError, revoke

    settings, person = _reviewer(by)
    try:
        s = revoke(_runtime(settings), suppression_id, person)
    except SuppressionError as exc:
        typer.echo(f"canary: {exc}", err=True)
        raise typer.Exit(2) from exc
    typer.echo(f"{s.id}\trevoked by {person}")
