"""``canary review``: list gates waiting for a person, show one safely, record a decision."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from worker.cli.output import highlighted, print_window
from worker.cli.usage import JsonOpt, load_settings, usage

review_app = typer.Typer(
    help="Human review: list gates waiting for a person (in review, or quarantined and not yet "
    "reviewed), record a reviewer's decision."
)


@review_app.command("list")
def review_list(
    limit: Annotated[int, typer.Option(help="At most this many, oldest first.")] = 100,
    quarantined: Annotated[
        bool, typer.Option("--quarantined", help="Quarantined gates no person has reviewed yet.")
    ] = False,
    json_out: JsonOpt = False,
) -> None:
    """Gates waiting for a person: in review (default) or quarantined and not yet reviewed."""
    from worker.pipeline.review import ReviewQueue, waiting
    from worker.pipeline.runtime import build_runtime

    queue: ReviewQueue = "quarantine" if quarantined else "review"
    for gate in waiting(build_runtime(load_settings(), role="reviewer"), limit, queue):
        row = {
            "gate_id": gate.id,
            "policy": gate.policy_id,
            "status": gate.status,
            "reason": gate.reason,
            "sha256": gate.sha256,
            "source": gate.source,
            "since": gate.updated_at.isoformat(),
        }
        typer.echo(json.dumps(row) if json_out else "\t".join(str(v) for v in row.values()))


@review_app.command("show")
def review_show(
    gate_id: Annotated[str, typer.Argument(help="Gate to look at.")],
    context: Annotated[int, typer.Option(help="Bytes shown around each piece of evidence.")] = 120,
    full: Annotated[
        bool, typer.Option("--full", help="Show the whole artifact, evidence highlighted.")
    ] = False,
    windows: Annotated[
        int, typer.Option(help="Model windows shown when the models, not the pre-check, decided.")
    ] = 3,
) -> None:
    """A gate's decision, votes and evidence in context, for a reviewer; when the models decided,
    the windows they scored highest. Hidden characters (controls, bidi, zero-width, tags) are
    written out as \\uXXXX: nothing in the artifact can drive the terminal."""
    from rich.text import Text

    from worker.core.fields import reader_view
    from worker.evaluation.tables import stdout_console
    from worker.pipeline.review import ReviewError, artifact, visible
    from worker.pipeline.review_windows import model_windows
    from worker.pipeline.runtime import build_runtime

    try:
        gate, data = artifact(build_runtime(load_settings(), role="reviewer"), gate_id)
    except ReviewError as exc:
        raise usage(str(exc)) from exc
    report = json.loads(gate.report or "{}")
    out = stdout_console()
    out.print(
        Text(
            f"gate {gate.id}  policy {gate.policy_id}  status {gate.status}  {gate.size} bytes  {gate.source}"
        )
    )
    out.print(Text(f"reason: {gate.reason or '-'}"))
    for vote in report.get("votes", []):
        verdict = vote.get("verdict") or f"invalid ({vote.get('error')})"
        out.print(Text(f"  vote {vote.get('detector')}: {verdict}  score {vote.get('score')}"))
    spans = [
        (e["span"]["start"], e["span"]["end"], f"{e['rule_id']} [{e.get('layer', '')}]")
        for e in report.get("precheck", {}).get("evidence", [])
    ]
    read = reader_view(data)  # a JSON document read as its fields: escapes undone
    shown = model_windows(report, data, windows, read) if windows > 0 else []
    if full:
        spans_only = [(a, b) for a, b, _ in spans]
        out.print(Text("artifact:"), highlighted(data, 0, len(data), spans_only, read))
    else:
        for start, end, label in spans:
            out.print(Text(f"  evidence {label} bytes {start}-{end}:"))
            lo, hi = max(0, start - context), min(len(data), end + context)
            out.print(highlighted(data, lo, hi, [(start, end)], read))
    if shown:
        out.print(Text("the pre-check did not block this; the windows the models scored highest:"))
        for number, window in enumerate(shown, 1):
            print_window(out, number, window)
    elif not spans and not full:
        out.print(Text(f"no pre-check evidence; first {context * 4} bytes:"))
        head = data[: context * 4]
        out.print(Text(visible(read(head) if read is not None else head)))


@review_app.command("decide")
def review_decide(
    gate_id: Annotated[str, typer.Argument(help="Gate in review.")],
    decision: Annotated[str, typer.Option("--decision", "-d", help="allow or quarantine")],
    note: Annotated[str, typer.Option(help="Why.")] = "",
    by: Annotated[str | None, typer.Option("--by", hidden=True, help="Deprecated: must name you.")] = None,
) -> None:
    """Record your decision and route the artifact accordingly.

    You are the reviewer whose token is CANARY_REVIEW_TOKEN, or the one mapped to your OS user
    (`canary review add-user NAME --os-user USER`). A gate in review goes to allow or
    quarantine. A quarantined gate is confirmed (quarantine) or released as a false positive
    (allow, which needs --note; a decisive pre-check quarantine needs a second reviewer).
    """
    from worker.pipeline.review import ReviewError, resolve
    from worker.pipeline.runtime import build_runtime
    from worker.web.review.commands import cli_reviewer

    if decision not in ("allow", "quarantine"):
        raise usage("--decision must be allow or quarantine")
    settings = load_settings()
    person = cli_reviewer(settings, by)
    try:
        gate = resolve(build_runtime(settings, role="reviewer"), gate_id, decision, person, note)  # type: ignore[arg-type]
    except ReviewError as exc:
        raise usage(str(exc)) from exc
    waiting = decision == "allow" and gate.status == "quarantine"
    typer.echo(
        f"{gate.id}\t{'release requested: a second reviewer must approve' if waiting else gate.status}\t{person}"
    )
