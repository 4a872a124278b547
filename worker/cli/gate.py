"""``canary scan`` (the embedded default), ``canary submit`` (the broker) and ``canary status``."""

from __future__ import annotations

import json
import sys
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
    from worker import startup

    with startup.setting_up():  # no garbage yet: see worker.startup
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
        sarif = SarifLog() if out is OutputFormat.sarif else None
    err = Console(stderr=True)
    rows: list[tuple[str, Any]] = []
    failed: list[str] = []
    try:
        with Progress(console=err, transient=True, disable=len(names) < 2 or not err.is_terminal) as bar:
            task = bar.add_task("gating", total=len(names))
            for name, data in read_inputs(names, failed, fields=fields, mail=options_from(settings)):
                submitted = gate.submit(data, policies, source=name)
                rows.extend((name, g) for g in submitted.gates)
                if sarif is not None:  # while the bytes are at hand
                    for g in submitted.gates:
                        sarif.add(name, data, g.policy_ref, g.report)
                bar.advance(task)
    finally:
        gate.close()
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
    Registry releases (``pypi:``/``npm:``, e.g. from an ``@LIST``) are not downloaded here: each
    is recorded and sent to the ``canary.fetch`` queue, where a worker fetches, diffs and gates
    it (one line per release: its fetch id, ``fetch``, ``pending``, the spec).
    """
    from producers.files import read_inputs, release_refs
    from producers.mail import is_mailbox, options_from
    from worker.cli.meter import BatchMeter
    from worker.core.errors import ConfigError
    from worker.pipeline.fetch import record_fetches
    from worker.pipeline.intake import submit_many
    from worker.pipeline.release_checkpoint import split_gated
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
    refs, names = release_refs(names, failed)
    seen: list[str] = []  # sources read so far; the last one may not be registered yet
    live = any(is_mailbox(name) for name in names)  # a live mailbox holds an unknown number
    meter = BatchMeter(None if live else len(refs) + len(names), sys.stderr)
    done = [0]

    def tick(*_: object) -> None:
        done[0] += 1
        meter.update(done[0] + len(failed))

    def reading() -> Iterator[tuple[str, bytes]]:
        for source, data in read_inputs(names, failed, fields=fields, mail=options_from(settings)):
            seen.append(source)
            yield source, data

    try:
        rt = build_runtime(settings, role="producer")
        refs, earlier = split_gated(rt, refs, policies) if refs else (refs, [])
        for _ in earlier:
            tick()
        fetches = record_fetches(rt, refs, policies) if refs else []  # rows first, then messages
        with celery_app.producer_or_acquire() as producer:
            for fetch in fetches:
                celery_app.send_task("canary.fetch", (fetch.id,), producer=producer, ignore_result=True)
                tick()

            def enqueue_batch(gate_ids: list[str]) -> None:
                # ignore_result: nobody waits on a pre-check's result; without it the producer
                # subscribes to a result channel per message it sends.
                celery_app.send_task("canary.precheck", (gate_ids,), producer=producer, ignore_result=True)

            submitted = submit_many(rt, reading(), policies, enqueue_batch, registered=tick) if names else []
    except Exception as exc:
        if exit_code_for(exc) is not None:
            not_gated(names, seen)
        raise
    finally:
        meter.close()
    print_intake(fetches, submitted, json_out)
    print_already_gated(rt, earlier, json_out)
    input_failures(failed)


def print_intake(fetches: list[Any], submitted: list[Any], json_out: bool) -> None:
    """One line per release recorded for fetching, then one per gate registered."""
    for fetch in fetches:
        if json_out:
            out = {"fetch_id": fetch.id, "spec": fetch.spec, "status": fetch.status}
            typer.echo(json.dumps(out | {"policies": fetch.policy_refs}))
        else:
            typer.echo(f"{fetch.id}\tfetch\t{fetch.status}\t{fetch.spec}")
    for sub in submitted:
        for gate, new in zip(sub.gates, sub.created, strict=True):
            if json_out:
                out = {"gate_id": gate.id, "policy": gate.policy_id, "sha256": gate.sha256}
                typer.echo(json.dumps(out | {"source": sub.source, "status": gate.status, "new": new}))
            else:
                typer.echo(f"{gate.id}\t{gate.policy_id}\t{gate.status}\t{sub.source}")


def print_already_gated(rt: Any, earlier: list[tuple[Any, list[str]]], json_out: bool) -> None:
    """One line per gate of each release a fetch gated before: not fetched again."""
    gates = rt.repo.get_many(gate_id for _, gate_ids in earlier for gate_id in gate_ids)
    for ref, gate_ids in earlier:
        for gate in (gates[gate_id] for gate_id in gate_ids if gate_id in gates):
            if json_out:
                out = {"gate_id": gate.id, "policy": gate.policy_id, "sha256": gate.sha256, "spec": ref.spec}
                flags = {"new": False, "already_gated": True}
                typer.echo(json.dumps(out | {"source": gate.source, "status": gate.status} | flags))
            else:
                typer.echo(f"{gate.id}\t{gate.policy_id}\t{gate.status}\t{gate.source}\talready gated")


def status(
    gate_ids: Annotated[list[str], typer.Argument(help="Gate ids (or fetch ids from `submit`).")],
    json_out: JsonOpt = False,
) -> None:
    """Show the state of gates (pending, running, allow, quarantine, review), or of registry
    releases recorded for fetching (pending, fetched with their gates, intake_failed with why)."""
    from worker.adapters.db import FetchRepo, GateRepo, make_engine

    engine = make_engine(load_settings().sqlalchemy_url)
    found = GateRepo(engine).get_many(gate_ids)
    fetches = FetchRepo(engine).get_many(gid for gid in gate_ids if gid not in found)
    missing = False
    for gid in gate_ids:
        gate, fetch = found.get(gid), fetches.get(gid)
        if gate is not None:
            out: dict[str, Any] = {"gate_id": gid, "status": gate.status, "policy": gate.policy_id}
            out["attempts"] = gate.attempts
            if gate.report:
                out["report"] = json.loads(gate.report)
        elif fetch is not None:
            out = {"fetch_id": gid, "status": fetch.status, "spec": fetch.spec, "attempts": fetch.attempts}
            out |= {"label": fetch.label, "gate_ids": fetch.gates, "reason": fetch.reason}
        else:
            missing = True
            out = {"gate_id": gid, "status": "unknown"}
        if json_out:
            typer.echo(json.dumps(out))
        else:
            extra = " ".join([*([out["reason"]] if out.get("reason") else []), *(out.get("gate_ids") or [])])
            what = out.get("policy") or out.get("spec") or ""
            typer.echo("\t".join([gid, str(out["status"]), what, *([extra] if extra else [])]))
    if missing:
        raise typer.Exit(1)
