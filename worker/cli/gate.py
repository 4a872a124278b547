"""``canary scan`` (the embedded default), ``canary submit`` (the broker) and ``canary status``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Annotated, Any

import typer

from worker.cli.output import print_table
from worker.cli.usage import (
    FieldOpt,
    FormatOpt,
    JsonOpt,
    OutputFormat,
    PolicyOpt,
    chosen_policies,
    input_failures,
    input_paths,
    load_settings,
    not_gated,
    output_format,
    table_fields,
    usage,
)
from worker.exits import exit_code_for


def scan(
    paths: Annotated[list[str], typer.Argument(help="Files, folders, or - for stdin.")],
    policy: PolicyOpt = None,
    json_out: JsonOpt = False,
    field: FieldOpt = None,
    fmt: FormatOpt = None,
) -> None:
    """Gate files now with the embedded default (no services needed).

    Exit 0 when everything was allowed, 1 when anything was quarantined or sent to review.
    """
    from rich.console import Console
    from rich.progress import Progress

    from producers.files import read_inputs
    from producers.mail import options_from
    from worker.cli.sarif import SarifLog
    from worker.tasks.embedded import EmbeddedGate

    out = output_format(fmt, json_out)
    policies = chosen_policies(policy)
    names = input_paths(paths)
    settings = load_settings()
    fields = table_fields(field, settings)
    gate = EmbeddedGate(settings)
    err = Console(stderr=True)
    rows: list[tuple[str, Any]] = []
    failed: list[str] = []
    sarif = SarifLog() if out is OutputFormat.sarif else None
    with Progress(console=err, transient=True, disable=len(names) < 2 or not err.is_terminal) as bar:
        task = bar.add_task("gating", total=len(names))
        for name, data in read_inputs(names, failed, fields=fields, mail=options_from(settings)):
            submitted = gate.submit(data, policies, source=name)
            rows.extend((name, g) for g in submitted.gates)
            if sarif is not None:  # while the bytes are at hand
                for g in submitted.gates:
                    sarif.add(name, data, g.policy_ref, g.report)
            bar.advance(task)
    blocked = any(g.status != "allow" for _, g in rows)
    if sarif is not None:
        typer.echo(sarif.dumps())
    elif out is OutputFormat.json:
        for _, g in rows:
            typer.echo(g.report or json.dumps({"gate_id": g.id, "status": g.status}))
    else:
        print_table(rows)
    input_failures(failed)
    raise typer.Exit(1 if blocked else 0)


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

    policies = chosen_policies(policy)
    names = input_paths(paths)
    settings = load_settings()
    fields = table_fields(field, settings)
    try:
        celery_app = create_app(settings, eager=False)
    except ConfigError as exc:
        raise usage(str(exc)) from exc
    failed: list[str] = []
    seen: list[str] = []  # sources read so far; the last one may not be registered yet

    def reading() -> Iterator[tuple[str, bytes]]:
        for source, data in read_inputs(names, failed, fields=fields, mail=options_from(settings)):
            seen.append(source)
            yield source, data

    try:
        rt = build_runtime(settings, role="producer")
        with celery_app.producer_or_acquire() as producer:

            def enqueue_batch(gate_ids: list[str]) -> None:
                # ignore_result: nobody waits on a pre-check's result; without it the producer
                # subscribes to a result channel per message it sends.
                celery_app.send_task("canary.precheck", (gate_ids,), producer=producer, ignore_result=True)

            submitted = submit_many(rt, reading(), policies, enqueue_batch)
    except Exception as exc:
        if exit_code_for(exc) is not None:
            not_gated(names, seen)
        raise
    for sub in submitted:
        for gate, new in zip(sub.gates, sub.created, strict=True):
            if json_out:
                out = {"gate_id": gate.id, "policy": gate.policy_id, "sha256": gate.sha256}
                typer.echo(json.dumps(out | {"source": sub.source, "status": gate.status, "new": new}))
            else:
                typer.echo(f"{gate.id}\t{gate.policy_id}\t{gate.status}\t{sub.source}")
    input_failures(failed)


def status(
    gate_ids: Annotated[list[str], typer.Argument(help="Gate ids.")],
    json_out: JsonOpt = False,
) -> None:
    """Show the state of gates (pending, running, allow, quarantine, review)."""
    from worker.adapters.db import GateRepo, make_engine

    repo = GateRepo(make_engine(load_settings().sqlalchemy_url))
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
