"""The ``intake_keys`` table: each ``Idempotency-Key`` the intake server saw and the answer it got
(see ``worker.web.idempotency``). Errors are not translated here, as before the move."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError
from sqlmodel import Field, Session, SQLModel

from worker.adapters.db.tables import utcnow


class IntakeKey(SQLModel, table=True):
    """One ``Idempotency-Key`` seen by the intake server and the answer it got."""

    __tablename__ = "intake_keys"

    key: str = Field(primary_key=True, max_length=64)  # sha256 of (token scope, client key)
    request_sha256: str = Field(max_length=64)
    submission_id: str = Field(max_length=32)
    gate_ids: str
    metadata_json: str = ""
    created_at: datetime = Field(default_factory=utcnow)


class IntakeKeyRepo:
    """Reads and first-writer-wins inserts of intake keys."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        IntakeKey.__table__.create(engine, checkfirst=True)  # type: ignore[attr-defined]

    def get(self, key: str) -> IntakeKey | None:
        with Session(self.engine, expire_on_commit=False) as session:
            return session.get(IntakeKey, key)

    def insert(self, row: IntakeKey) -> bool:
        """Store ``row``; False when a row with its key exists already (a concurrent request won)."""
        try:
            with Session(self.engine) as session:
                session.add(row)
                session.commit()
        except IntegrityError:
            return False
        return True
