"""Reviewer identities: who may decide a gate, and how each proves it.

A reviewer is a row of the ``reviewers`` table: a name, an argon2id hash of a password (the web
app's log-in), optionally the sha256 of a CLI token (``CANARY_REVIEW_TOKEN``) and the OS user the
CLI maps to this reviewer. Passwords and tokens are never stored in the clear.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from datetime import datetime

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError
from sqlalchemy.engine import Engine
from sqlmodel import Field, Session, SQLModel, select

from worker.adapters.db import utcnow
from worker.core.errors import UsageError

NAME = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")
MIN_PASSWORD = 12
_HASHER = PasswordHasher()
# Verified against when the name is unknown, so a wrong name costs as long as a wrong password.
_DUMMY = _HASHER.hash(secrets.token_hex(16))


class IdentityError(UsageError):
    """A reviewer name, password or token is unacceptable, or a reviewer is unknown."""


class Reviewer(SQLModel, table=True):
    """A person who may decide gates."""

    __tablename__ = "reviewers"

    name: str = Field(primary_key=True, max_length=64)
    password_hash: str
    token_sha256: str | None = Field(default=None, index=True, max_length=64)
    os_user: str | None = Field(default=None, index=True, max_length=64)
    created_at: datetime = Field(default_factory=utcnow)


def _token_digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


class ReviewerStore:
    """Reads and writes of the ``reviewers`` table (created on first use)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        Reviewer.__table__.create(engine, checkfirst=True)  # type: ignore[attr-defined]

    def add(self, name: str, password: str, os_user: str | None = None) -> Reviewer:
        """Create reviewer ``name``, or set a new password (and OS user) for an existing one."""
        if not NAME.match(name):
            raise IdentityError(f"reviewer name {name!r}: use 1-64 of a-z 0-9 . _ - (lower case)")
        if len(password) < MIN_PASSWORD:
            raise IdentityError(f"the password must be at least {MIN_PASSWORD} characters")
        with Session(self.engine, expire_on_commit=False) as session:
            row = session.get(Reviewer, name) or Reviewer(name=name, password_hash="")
            row.password_hash = _HASHER.hash(password)
            if os_user is not None:
                row.os_user = os_user or None
            session.add(row)
            session.commit()
            return row

    def get(self, name: str) -> Reviewer | None:
        with Session(self.engine, expire_on_commit=False) as session:
            return session.get(Reviewer, name)

    def check_password(self, name: str, password: str) -> Reviewer | None:
        """The reviewer when ``password`` is theirs, else None (the same work either way)."""
        row = self.get(name)
        try:
            _HASHER.verify(row.password_hash if row else _DUMMY, password)
        except (VerifyMismatchError, VerificationError, InvalidHashError):
            return None
        return row

    def issue_token(self, name: str) -> str:
        """A new CLI token for ``name`` (the previous one stops working); only its sha256 is kept."""
        token = "cgr_" + secrets.token_urlsafe(32)
        with Session(self.engine) as session:
            row = session.get(Reviewer, name)
            if row is None:
                raise IdentityError(f"no reviewer {name!r}")
            row.token_sha256 = _token_digest(token)
            session.add(row)
            session.commit()
        return token

    def by_token(self, token: str) -> Reviewer | None:
        if not token:
            return None
        with Session(self.engine, expire_on_commit=False) as session:
            stmt = select(Reviewer).where(Reviewer.token_sha256 == _token_digest(token))
            return session.exec(stmt).first()

    def by_os_user(self, os_user: str) -> Reviewer | None:
        with Session(self.engine, expire_on_commit=False) as session:
            return session.exec(select(Reviewer).where(Reviewer.os_user == os_user)).first()
