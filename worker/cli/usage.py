"""The CLI's shared options and the one home of its usage errors: a clear one-line message on
stderr and exit status 2, for bad arguments, invalid settings and unusable inputs alike."""

from __future__ import annotations

from enum import StrEnum
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from worker.settings import Settings

PolicyOpt = Annotated[
    list[str] | None,
    typer.Option("--policy", "-p", help="Policy id or YAML path; repeat to gate under several."),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="One JSON object per line.")]


class OutputFormat(StrEnum):
    table = "table"
    json = "json"
    sarif = "sarif"


FormatOpt = Annotated[
    OutputFormat | None,
    typer.Option(
        "--format", help="table (default), json (as --json), sarif (SARIF 2.1.0 for code scanning)."
    ),
]
FieldOpt = Annotated[
    list[str] | None,
    typer.Option("--field", help="jsonl:/csv: rows: content=FIELD (repeatable), source=FIELD."),
]


def usage(message: str) -> typer.Exit:
    """Say what is wrong on stderr, on one line; the caller raises the returned exit (status 2)."""
    typer.echo(
        f"canary: {'; '.join(line.strip() for line in message.splitlines() if line.strip())}", err=True
    )
    return typer.Exit(2)


def load_settings() -> Settings:
    """The settings, or a usage error naming what is invalid."""
    from worker.core.errors import ConfigError
    from worker.settings import Settings

    try:
        return Settings.load()
    except ConfigError as exc:
        raise usage(str(exc)) from exc


def output_format(chosen: OutputFormat | None, json_out: bool) -> OutputFormat:
    """``--format``, with ``--json`` as its old spelling of ``--format json``."""
    if json_out and chosen not in (None, OutputFormat.json):
        raise usage(f"--json and --format {chosen.value} ask for different outputs; give one")
    return OutputFormat.json if json_out else chosen or OutputFormat.table


def chosen_policies(policy: list[str] | None) -> list[str]:
    """The policies asked for (default: prompt-injection), each loaded and checked whole
    (detector kinds and options, rule sets compiled): a usage error (exit 2) if one cannot work."""
    from policies import PolicyError, load_policy
    from worker.adapters.compiled_cache import enable
    from worker.core.errors import ConfigError
    from worker.detectors.preflight import check_policy

    enable(load_settings().compiled_cache_dir)  # the check compiles the rule sets: from the cache
    chosen = policy or ["prompt-injection"]
    for ref in chosen:
        try:
            check_policy(load_policy(ref))
        except (PolicyError, ConfigError) as exc:
            raise usage(str(exc)) from exc
    return chosen


def not_gated(names: list[str], seen: list[str]) -> None:
    """A service failed mid-intake: name the inputs that were not gated (the one being stored
    and every one not reached). Those before it were stored and registered; a registered gate
    whose message did not go out stays visibly pending and the sweeper sends it."""
    started = {name for name in names for source in seen if source == name or source.startswith(name)}
    for name in [*seen[-1:], *(n for n in names if n not in started)]:
        typer.echo(f"canary: not gated: {name}", err=True)


def table_fields(field: list[str] | None, settings: Settings) -> dict[str, list[str]]:
    """Which fields of a jsonl:/csv: row are its content and source."""
    from producers.tables import FieldError, parse_fields

    try:
        return parse_fields(field or [settings.table_fields])
    except FieldError as exc:
        raise usage(str(exc)) from exc


def input_paths(paths: list[str]) -> list[str]:
    """The input paths, folders expanded; a usage error when there is nothing to gate."""
    from producers.files import InputError, expand_paths

    try:
        expanded = expand_paths(paths)
    except InputError as exc:
        raise usage(str(exc)) from exc
    if not expanded:
        raise usage("no input files")
    return expanded


def input_failures(failed: list[str]) -> None:
    """Inputs that could not be read were not gated: say so and exit 2 (the rest was gated)."""
    for message in failed:
        typer.echo(f"canary: not gated: {message}", err=True)
    if failed:
        raise typer.Exit(2)
