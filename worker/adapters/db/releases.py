"""The ``release_gates`` table: which gate holds each registry release under each policy, so a
rerun of a registry batch skips (does not download) what already reached a gate row.

A row is written right after its gates are registered; a row whose gate is gone (deleted,
truncated) counts for nothing, so the gates table stays the source of truth.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime

from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError
from sqlmodel import Field, Session, SQLModel, col, select

from worker.adapters.db.engine import translated
from worker.adapters.db.tables import Gate, utcnow

KEY_CHARS = 512
CHUNK = 500  # keys per query


class ReleaseGate(SQLModel, table=True):
    """One registry release (``pypi:name==version``, ``npm:name@version``) gated under one policy."""

    __tablename__ = "release_gates"

    release: str = Field(primary_key=True, max_length=KEY_CHARS)
    policy_id: str = Field(primary_key=True, max_length=128)
    policy_sha256: str = Field(primary_key=True, max_length=64)
    gate_id: str = Field(max_length=32)
    created_at: datetime = Field(default_factory=utcnow)


class ReleaseGateRepo:
    """Lookups and records of the gates that hold registry releases (errors translated)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine  # the table is created with the others (``make_engine``)

    @translated
    def gated(self, releases: Iterable[str], policies: Sequence[tuple[str, str]]) -> dict[str, list[str]]:
        """Release -> the ids of the gates holding it under each of ``policies`` (``(id, sha256)``
        pairs, in their order), for the releases held under every one by a gate that exists."""
        keys = list(dict.fromkeys(release[:KEY_CHARS] for release in releases))
        found: dict[str, dict[tuple[str, str], str]] = {}
        with Session(self.engine) as session:
            for lo in range(0, len(keys), CHUNK):
                query = select(ReleaseGate).where(col(ReleaseGate.release).in_(keys[lo : lo + CHUNK]))
                for row in session.exec(query).all():
                    found.setdefault(row.release, {})[(row.policy_id, row.policy_sha256)] = row.gate_id
            held = {
                key: [by_policy[p] for p in policies]
                for key, by_policy in found.items()
                if policies and all(p in by_policy for p in policies)
            }
            ids = list({gate_id for gate_ids in held.values() for gate_id in gate_ids})
            exist: set[str] = set()
            for lo in range(0, len(ids), CHUNK):
                exist.update(
                    session.exec(select(Gate.id).where(col(Gate.id).in_(ids[lo : lo + CHUNK]))).all()
                )
        return {key: gate_ids for key, gate_ids in held.items() if exist.issuperset(gate_ids)}

    @translated
    def record(self, release: str, gates: Sequence[Gate]) -> None:
        """Remember that ``gates`` hold ``release``; a newer gate for the same release and policy
        (the old one gone) replaces the old."""
        for gate in gates:
            row = ReleaseGate(
                release=release[:KEY_CHARS],
                policy_id=gate.policy_id,
                policy_sha256=gate.policy_sha256,
                gate_id=gate.id,
            )
            try:
                with Session(self.engine) as session:
                    session.merge(row)
                    session.commit()
            except IntegrityError:  # another worker recorded it at the same moment: theirs stands
                continue
