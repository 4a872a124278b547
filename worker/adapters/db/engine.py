"""The gate database's engines, and the one boundary where the driver's errors become the
project's own: ``DatabaseUnavailableError`` when the database cannot be reached (worth a retry),
``DatabaseError`` for any other failed statement."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any, ParamSpec, TypeVar

from sqlalchemy import event, text
from sqlalchemy.engine import Engine
from sqlalchemy.exc import OperationalError, SQLAlchemyError
from sqlmodel import SQLModel, create_engine

from worker.core.errors import DatabaseError, DatabaseUnavailableError

P = ParamSpec("P")
R = TypeVar("R")


@contextmanager
def database_errors() -> Iterator[None]:
    """Translate the driver's errors into the project's own (the one boundary that sees them)."""
    try:
        yield
    except OperationalError as exc:
        raise DatabaseUnavailableError(f"database unavailable: {_first_line(exc)}") from exc
    except SQLAlchemyError as exc:
        raise DatabaseError(f"database error: {_first_line(exc)}") from exc


def _first_line(exc: SQLAlchemyError) -> str:
    """The driver's own message, first line only (never the statement or its parameters)."""
    orig = getattr(exc, "orig", None) or exc
    lines = str(orig).strip().splitlines()
    return f"{type(orig).__name__}: {lines[0][:200] if lines else ''}"


def translated(fn: Callable[P, R]) -> Callable[P, R]:
    """``fn`` with the driver's errors translated (see ``database_errors``)."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        with database_errors():
            return fn(*args, **kwargs)

    return wrapper


@translated
def make_engine(url: str) -> Engine:
    if url.startswith("sqlite"):
        engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 30})

        @event.listens_for(engine, "connect")
        def _pragmas(dbapi_conn, _record):  # type: ignore[no-untyped-def]
            cur = dbapi_conn.cursor()
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA synchronous=NORMAL")
            cur.close()

    else:
        # No pre-ping round trip per checkout: a connection broken by a database restart
        # fails its statement, the task retries (see worker.tasks.gate) and the pool reconnects.
        engine = create_engine(url, pool_size=5, max_overflow=5, pool_recycle=1800)
    SQLModel.metadata.create_all(engine)
    _add_missing_columns(engine)
    return engine


# Columns added after the first release: ``create_all`` creates missing tables, not columns.
_ADDED_COLUMNS = {"gates": {"claim": "VARCHAR(64)"}}


def _add_missing_columns(engine: Engine) -> None:
    from sqlalchemy import inspect

    inspector = inspect(engine)
    for table, columns in _ADDED_COLUMNS.items():
        have = {c["name"] for c in inspector.get_columns(table)}
        missing = [(name, kind) for name, kind in columns.items() if name not in have]
        if not missing:
            continue
        with engine.begin() as conn:
            for name, kind in missing:
                conn.execute(text(f"ALTER TABLE {table} ADD COLUMN {name} {kind}"))


def make_reader_engine(url: str) -> Engine:
    """A lazily connecting engine for scrapes: a database that is down at start-up is no error."""
    if url.startswith("sqlite"):
        return create_engine(url, connect_args={"check_same_thread": False, "timeout": 5})
    return create_engine(url, pool_pre_ping=True, pool_size=1, max_overflow=1)


def aware(value: Any) -> datetime | None:
    """A database timestamp as an aware UTC datetime (SQLite may hand back strings or naive values)."""
    if value is None:
        return None
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    if not isinstance(value, datetime):
        return None
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def driver_error_kind(exc: BaseException) -> str | None:
    """``"config"`` for a database URL or driver mistake, ``"service"`` for a failure the driver
    reported, None for anything else (for ``worker.exits``, which imports no sqlalchemy)."""
    from sqlalchemy.exc import ArgumentError, DBAPIError, NoSuchModuleError

    if isinstance(exc, ArgumentError | NoSuchModuleError):
        return "config"
    return "service" if isinstance(exc, DBAPIError) else None
