"""``canary``: scan (embedded default), submit/status (broker), worker, beat, sweep, flower, eval."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping
from typing import Annotated, Any

import typer

app = typer.Typer(
    name="canary",
    help="Canary Gate: classify untrusted artifacts before an AI agent reads them.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.callback()
def _setup() -> None:
    """Canary Gate: classify untrusted artifacts before an AI agent reads them."""
    import logging

    from worker.logs import configure_logging

    configure_logging(logging.WARNING)


PolicyOpt = Annotated[
    list[str] | None,
    typer.Option("--policy", "-p", help="Policy id or YAML path; repeat to gate under several."),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="One JSON object per line.")]
FieldOpt = Annotated[
    list[str] | None,
    typer.Option("--field", help="jsonl:/csv: rows: content=FIELD (repeatable), source=FIELD."),
]


def _fields(field: list[str] | None, settings: Any) -> dict[str, list[str]]:
    from producers.tables import FieldError, parse_fields

    try:
        return parse_fields(field or [settings.table_fields])
    except FieldError as exc:
        raise _usage(str(exc)) from exc


def _usage(message: str) -> typer.Exit:
    typer.echo(f"canary: {message}", err=True)
    return typer.Exit(2)


def _policies(policy: list[str] | None) -> list[str]:
    from policies import PolicyError, load_policy

    chosen = policy or ["prompt-injection"]
    for ref in chosen:
        try:
            load_policy(ref)
        except PolicyError as exc:
            raise _usage(str(exc)) from exc
    return chosen


def _settings() -> Any:
    from pydantic import ValidationError

    from worker.settings import Settings

    try:
        return Settings()
    except ValidationError as exc:
        raise _usage(f"invalid settings: {exc.errors()[0]['msg']}") from exc


def _inputs(paths: list[str]) -> list[str]:
    from producers.files import InputError, expand_paths

    try:
        expanded = expand_paths(paths)
    except InputError as exc:
        raise _usage(str(exc)) from exc
    if not expanded:
        raise _usage("no input files")
    return expanded


@app.command()
def scan(
    paths: Annotated[list[str], typer.Argument(help="Files, folders, or - for stdin.")],
    policy: PolicyOpt = None,
    json_out: JsonOpt = False,
    field: FieldOpt = None,
) -> None:
    """Gate files now with the embedded default (no services needed).

    Exit 0 when everything was allowed, 1 when anything was quarantined or sent to review.
    """
    from rich.console import Console
    from rich.progress import Progress

    from producers.files import read_inputs
    from producers.mail import options_from
    from worker.tasks.embedded import EmbeddedGate

    policies = _policies(policy)
    names = _inputs(paths)
    settings = _settings()
    fields = _fields(field, settings)
    gate = EmbeddedGate(settings)
    err = Console(stderr=True)
    rows: list[tuple[str, Any]] = []
    failed: list[str] = []
    with Progress(console=err, transient=True, disable=len(names) < 2 or not err.is_terminal) as bar:
        task = bar.add_task("gating", total=len(names))
        for name, data in read_inputs(names, failed, fields=fields, mail=options_from(settings)):
            submitted = gate.submit(data, policies, source=name)
            rows.extend((name, g) for g in submitted.gates)
            bar.advance(task)
    blocked = any(g.status != "allow" for _, g in rows)
    if json_out:
        for _, g in rows:
            typer.echo(g.report or json.dumps({"gate_id": g.id, "status": g.status}))
    else:
        _print_table(rows)
    _input_failures(failed)
    raise typer.Exit(1 if blocked else 0)


def _input_failures(failed: list[str]) -> None:
    """Inputs that could not be read were not gated: say so and exit 2 (the rest was gated)."""
    for message in failed:
        typer.echo(f"canary: not gated: {message}", err=True)
    if failed:
        raise typer.Exit(2)


def _print_table(rows: list[tuple[str, Any]]) -> None:
    from rich.table import Table
    from rich.text import Text

    from worker.evaluation.tables import stdout_console

    colours = {"allow": "green", "quarantine": "red", "review": "yellow"}
    table = Table(title="Canary Gate decisions")
    for column in ("artifact", "policy", "decision", "reason", "bytes", "gate"):
        table.add_column(column, overflow="fold")
    for name, g in rows:
        colour = colours.get(g.status, "white")
        reason = g.reason or ""  # whole: a cut reason hides the part that names the evidence
        # Names and reasons are data: plain Text, so "[x]" is not markup and ":six:" not an emoji.
        table.add_row(Text(name), g.policy_id, Text(g.status, style=colour), Text(reason), str(g.size), g.id)
    console = stdout_console()  # piped (CI logs, `| tee`): 160 columns, not rich's 80
    if not console.is_terminal:  # whole gate ids (status takes them) and names on one line each
        name = max((len(n) for n, _ in rows), default=8)
        reason = max((len(g.reason or "") for _, g in rows), default=6)
        console.width = max(console.width, name + 32 + min(reason, 100) + 60)
    console.print(table)
    counts = {s: sum(1 for _, g in rows if g.status == s) for s in ("allow", "quarantine", "review")}
    console.print(", ".join(f"{n} {s}" for s, n in counts.items()))


@app.command()
def submit(
    paths: Annotated[list[str], typer.Argument(help="Files, folders, or - for stdin.")],
    policy: PolicyOpt = None,
    json_out: JsonOpt = False,
    field: FieldOpt = None,
) -> None:
    """Store artifacts, create their gates and enqueue them on the configured broker.

    Artifacts given together are enqueued together, ``CANARY_BATCH_SIZE`` gates per message.
    """
    from producers.files import read_inputs
    from producers.mail import options_from
    from worker.core.errors import ConfigError
    from worker.pipeline.intake import submit_many
    from worker.pipeline.runtime import build_runtime
    from worker.tasks.app import create_app

    policies = _policies(policy)
    names = _inputs(paths)
    settings = _settings()
    fields = _fields(field, settings)
    try:
        celery_app = create_app(settings, eager=False)
    except ConfigError as exc:
        raise _usage(str(exc)) from exc
    rt = build_runtime(settings, role="producer")
    failed: list[str] = []
    with celery_app.producer_or_acquire() as producer:

        def enqueue_batch(gate_ids: list[str]) -> None:
            # ignore_result: nobody waits on a pre-check's result; without it the producer
            # subscribes to a result channel per message it sends.
            celery_app.send_task("canary.precheck", (gate_ids,), producer=producer, ignore_result=True)

        submitted = submit_many(
            rt,
            read_inputs(names, failed, fields=fields, mail=options_from(settings)),
            policies,
            enqueue_batch,
        )
    for sub in submitted:
        for gate, new in zip(sub.gates, sub.created, strict=True):
            if json_out:
                out = {"gate_id": gate.id, "policy": gate.policy_id, "sha256": gate.sha256}
                typer.echo(json.dumps(out | {"source": sub.source, "status": gate.status, "new": new}))
            else:
                typer.echo(f"{gate.id}\t{gate.policy_id}\t{gate.status}\t{sub.source}")
    _input_failures(failed)


@app.command()
def status(
    gate_ids: Annotated[list[str], typer.Argument(help="Gate ids.")],
    json_out: JsonOpt = False,
) -> None:
    """Show the state of gates (pending, running, allow, quarantine, review)."""
    from worker.adapters.db import GateRepo, make_engine

    repo = GateRepo(make_engine(_settings().sqlalchemy_url))
    found = repo.get_many(gate_ids)
    missing = False
    for gid in gate_ids:
        gate = found.get(gid)
        if gate is None:
            missing = True
            out: dict[str, Any] = {"gate_id": gid, "status": "unknown"}
        else:
            out = {"gate_id": gid, "status": gate.status, "policy": gate.policy_id, "attempts": gate.attempts}
            if gate.report:
                out["report"] = json.loads(gate.report)
        if json_out:
            typer.echo(json.dumps(out))
        else:
            typer.echo(f"{gid}\t{out['status']}\t{out.get('policy', '')}")
    if missing:
        raise typer.Exit(1)


def _celery(argv: list[str]) -> None:
    import logging

    from worker.core.errors import ConfigError
    from worker.logs import configure_logging
    from worker.tasks.app import create_app

    settings = _settings()
    configure_logging(logging.INFO, stdlib=True)
    if not sys.stderr.isatty():  # Python warnings (Celery's root warning) as JSON lines too
        from worker.logs import capture_warnings_as_json

        capture_warnings_as_json()
    try:
        celery_app = create_app(settings, eager=False)
    except ConfigError as exc:
        raise _usage(str(exc)) from exc
    celery_app.start(argv)


@app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def worker(
    ctx: typer.Context,
    concurrency: Annotated[int, typer.Option(help="Worker processes (prefork pool).")] = 2,
    loglevel: Annotated[str, typer.Option(help="Celery log level.")] = "INFO",
) -> None:
    """Start a Celery worker (prefork pool) consuming the gate queue."""
    settings = _settings()
    argv = ["worker", f"--concurrency={concurrency}", "--pool=prefork", f"--loglevel={loglevel}"]
    events = ["-E"] if settings.task_events else []
    quiet = [] if sys.stdout.isatty() else ["--quiet"]  # no text banner in a JSON-lines log
    _celery([*quiet, *argv, "-Q", settings.task_queue, *events, *ctx.args])


@app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def beat(ctx: typer.Context) -> None:
    """Start Celery beat (schedules the stuck-gate sweeper)."""
    _celery(["beat", "--loglevel=INFO", *ctx.args])


@app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def flower(ctx: typer.Context) -> None:
    """Start Flower (basic auth from FLOWER_BASIC_AUTH; without any auth it listens on 127.0.0.1 only)."""
    argv = flower_argv(list(ctx.args), os.environ)
    if argv[1:] != list(ctx.args):
        typer.echo(
            "canary: Flower has no authentication (set FLOWER_BASIC_AUTH=user:password, or pass "
            "--basic-auth or --auth-provider): listening on 127.0.0.1 only",
            err=True,
        )
    _celery(argv)


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


@app.command()
def sweep(json_out: JsonOpt = False) -> None:
    """Run the stuck-gate sweeper once."""
    from worker.pipeline.runtime import build_runtime
    from worker.pipeline.sweeper import sweep as run_sweep
    from worker.tasks.app import create_app

    settings = _settings()
    rt = build_runtime(settings, role="sweeper")
    if settings.embedded:
        from worker.tasks.embedded import EmbeddedGate

        gate = EmbeddedGate(settings)
        counts = run_sweep(gate.rt, gate.run)
    else:
        celery_app = create_app(settings, eager=False)
        counts = run_sweep(
            rt, lambda gid: celery_app.send_task("canary.precheck", (gid,), ignore_result=True)
        )
    typer.echo(json.dumps(counts) if json_out else ", ".join(f"{k}={v}" for k, v in counts.items()))


review_app = typer.Typer(
    help="Human review: list gates waiting for a person (in review, or quarantined and not yet "
    "reviewed), record a reviewer's decision."
)
app.add_typer(review_app, name="review")


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
    for gate in waiting(build_runtime(_settings(), role="reviewer"), limit, queue):
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
) -> None:
    """A gate's decision, votes and evidence in context, for a reviewer. Hidden characters (controls,
    bidi, zero-width, tags) are written out as \\uXXXX: nothing in the artifact can drive the terminal."""
    from rich.text import Text

    from worker.evaluation.tables import stdout_console
    from worker.pipeline.review import ReviewError, artifact, visible
    from worker.pipeline.runtime import build_runtime

    try:
        gate, data = artifact(build_runtime(_settings(), role="reviewer"), gate_id)
    except ReviewError as exc:
        raise _usage(str(exc)) from exc
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
    if full:
        spans_only = [(a, b) for a, b, _ in spans]
        out.print(Text("artifact:"), _highlighted(data, 0, len(data), spans_only))
        return
    for start, end, label in spans:
        out.print(Text(f"  evidence {label} bytes {start}-{end}:"))
        out.print(_highlighted(data, max(0, start - context), min(len(data), end + context), [(start, end)]))
    if not spans:
        out.print(Text(f"no pre-check evidence; first {context * 4} bytes:"))
        out.print(Text(visible(data[: context * 4])))


def _highlighted(data: bytes, lo: int, hi: int, spans: list[tuple[int, int]]) -> Any:
    """``data[lo:hi]`` as safe text with ``spans`` highlighted."""
    from rich.text import Text

    from worker.pipeline.review import visible

    text, position = Text(), lo
    for start, end in sorted((max(a, lo), min(b, hi)) for a, b in spans if b > lo and a < hi):
        if start < position:
            start = position
        text.append(visible(data[position:start]))
        text.append(visible(data[start:end]), style="bold reverse")
        position = max(position, end)
    text.append(visible(data[position:hi]))
    return text


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
        raise _usage("--decision must be allow or quarantine")
    settings = _settings()
    person = cli_reviewer(settings, by)
    try:
        gate = resolve(build_runtime(settings, role="reviewer"), gate_id, decision, person, note)  # type: ignore[arg-type]
    except ReviewError as exc:
        raise _usage(str(exc)) from exc
    waiting = decision == "allow" and gate.status == "quarantine"
    typer.echo(
        f"{gate.id}\t{'release requested: a second reviewer must approve' if waiting else gate.status}\t{person}"
    )


def main() -> None:
    try:
        app()
    except KeyboardInterrupt:
        sys.exit(130)


from worker.evaluation.command import eval_command  # noqa: E402

app.command("eval")(eval_command)

from worker.adapters.metrics import metrics_command  # noqa: E402

app.command("metrics")(metrics_command)

from worker.web.serve import serve_command  # noqa: E402

app.command("serve")(serve_command)

from worker.commands.review_extras import audit_command, export_command  # noqa: E402
from worker.commands.stuck import stuck_command  # noqa: E402

review_app.command("audit")(audit_command)
review_app.command("export")(export_command)

from worker.commands.suppress import suppress_command, suppressions_command, unsuppress_command  # noqa: E402

review_app.command("suppress")(suppress_command)
review_app.command("suppressions")(suppressions_command)
review_app.command("unsuppress")(unsuppress_command)

app.command("stuck")(stuck_command)

from worker.web.review.commands import add_user_command, token_command  # noqa: E402
from worker.web.review.commands import serve_command as review_serve_command  # noqa: E402

review_app.command("serve")(review_serve_command)
review_app.command("add-user")(add_user_command)
review_app.command("token")(token_command)
