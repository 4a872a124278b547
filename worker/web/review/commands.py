"""``canary review serve``, ``add-user`` and ``token``, and the CLI reviewer's identity."""

from __future__ import annotations

import getpass
import sys
from typing import TYPE_CHECKING, Annotated

import typer

from worker.cli.usage import load_settings

if TYPE_CHECKING:  # the CLI imports this module at start-up: its heavy imports wait for use
    from worker.adapters.reviewers import Reviewer, ReviewerStore
    from worker.settings import Settings


def _fail(message: str) -> typer.Exit:
    typer.echo(f"canary: {message}", err=True)
    return typer.Exit(2)


def _store(settings: Settings) -> ReviewerStore:
    from worker.adapters.db import make_engine
    from worker.adapters.reviewers import ReviewerStore

    settings.data_dir.mkdir(parents=True, exist_ok=True)  # the embedded default's SQLite file lives there
    return ReviewerStore(make_engine(settings.sqlalchemy_url))


def _read_password(confirm: bool) -> str:
    """The password: prompted (twice) on a terminal, else the first line of stdin."""
    if sys.stdin.isatty():
        password = getpass.getpass("password: ")
        if confirm and getpass.getpass("again: ") != password:
            raise _fail("the passwords differ")
        return password
    return sys.stdin.readline().rstrip("\r\n")


def cli_reviewer(settings: Settings, claimed: str | None = None) -> str:
    """The reviewer running the CLI: ``CANARY_REVIEW_TOKEN``'s owner, else the reviewer mapped to
    this OS user. ``claimed`` (the old ``--by``) must name that same reviewer."""
    store = _store(settings)
    found: Reviewer | None
    if settings.review_token is not None:
        found = store.by_token(settings.review_token.get_secret_value())
        if found is None:
            raise _fail("CANARY_REVIEW_TOKEN is not a reviewer's token (issue one: canary review token NAME)")
    else:
        os_user = getpass.getuser()
        found = store.by_os_user(os_user)
        if found is None:
            raise _fail(
                f"no reviewer identity: set CANARY_REVIEW_TOKEN (canary review token NAME) or map OS user "
                f"{os_user!r} to a reviewer (canary review add-user NAME --os-user {os_user})"
            )
    if claimed is not None and claimed != found.name:
        raise _fail(
            f"--by {claimed} is not you: your reviewer identity is {found.name} (--by is no longer needed)"
        )
    return found.name


def add_user_command(
    name: Annotated[str, typer.Argument(help="Reviewer name (lower case, a-z 0-9 . _ -).")],
    os_user: Annotated[
        str | None, typer.Option("--os-user", help="OS user whose `canary review decide` acts as NAME.")
    ] = None,
) -> None:
    """Add a reviewer (or set a new password): the password is read from stdin, stored as an argon2 hash."""
    from worker.adapters.reviewers import IdentityError

    store = _store(load_settings())
    try:
        store.add(name, _read_password(confirm=True), os_user=os_user)
    except IdentityError as exc:
        raise _fail(str(exc)) from exc
    typer.echo(f"reviewer {name} saved" + (f" (OS user {os_user})" if os_user else ""))


def token_command(name: Annotated[str, typer.Argument(help="Reviewer name.")]) -> None:
    """Print a new CLI token for NAME (password read from stdin); use it as CANARY_REVIEW_TOKEN."""
    store = _store(load_settings())
    if store.check_password(name, _read_password(confirm=False)) is None:
        raise _fail("wrong reviewer name or password")
    typer.echo(store.issue_token(name))


def serve_command(
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8081,
    ssl_certfile: Annotated[str | None, typer.Option(help="TLS certificate (PEM): serve HTTPS.")] = None,
    ssl_keyfile: Annotated[str | None, typer.Option(help="TLS private key (PEM).")] = None,
) -> None:
    """Serve the review app: queues, items, decisions, audit trail (sign in as a reviewer)."""
    import logging

    import uvicorn

    from worker.logs import configure_logging
    from worker.web.review.app import create_app

    configure_logging(logging.INFO, stdlib=True)
    app = create_app(load_settings())
    uvicorn.run(
        app, host=host, port=port, ssl_certfile=ssl_certfile, ssl_keyfile=ssl_keyfile, log_level="info"
    )
