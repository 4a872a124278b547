"""The CLI's shared options and the one home of its usage errors: a clear one-line message on
stderr and exit status 2, for bad arguments, invalid settings and unusable inputs alike."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from worker.settings import Settings

PolicyOpt = Annotated[
    list[str] | None,
    typer.Option("--policy", "-p", help="Policy id or YAML path; repeat to gate under several."),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="One JSON object per line.")]
FieldOpt = Annotated[
    list[str] | None,
    typer.Option("--field", help="jsonl:/csv: rows: content=FIELD (repeatable), source=FIELD."),
]


def usage(message: str) -> typer.Exit:
    """Say what is wrong on stderr; the caller raises the returned exit (status 2)."""
    typer.echo(f"canary: {message}", err=True)
    return typer.Exit(2)


def load_settings() -> Settings:
    """The settings, or a usage error naming what is invalid."""
    from worker.core.errors import ConfigError
    from worker.settings import Settings

    try:
        return Settings.load()
    except ConfigError as exc:
        raise usage(str(exc)) from exc


def chosen_policies(policy: list[str] | None) -> list[str]:
    """The policies asked for (default: prompt-injection), each checked to load."""
    from policies import PolicyError, load_policy

    chosen = policy or ["prompt-injection"]
    for ref in chosen:
        try:
            load_policy(ref)
        except PolicyError as exc:
            raise usage(str(exc)) from exc
    return chosen


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
