"""Gate rows built as the ORM loads them (``gate_from_row``, ``new_gate``): the same gate as
one built through its constructor."""

from __future__ import annotations

import subprocess
import sys

import pytest

from worker.adapters.db import Gate, GateStatus, Submission, deadline_from_now, gate_from_row, new_gate
from worker.adapters.db.tables import GATE_COLUMNS, new_submission

GIVEN = {
    "sha256": "a" * 64,
    "object_key": "objects/a",
    "size": 3,
    "policy_ref": "trivial",
    "policy_id": "trivial",
    "policy_version": "1",
    "policy_sha256": "b" * 64,
    "source": "s",
}
MADE = {"id", "created_at", "updated_at"}  # new on every construction


def _without(values: dict, names: set[str]) -> dict:
    return {k: v for k, v in values.items() if k not in names}


def test_a_row_built_gate_equals_the_validated_one_and_takes_updates():
    """A gate built from a row's columns reads and updates as one built through its constructor."""
    built = Gate(**GIVEN, deadline=deadline_from_now(60))
    row = {name: getattr(built, name) for name in GATE_COLUMNS}
    fast = gate_from_row({**row, "status": "running"})
    assert fast.model_dump() == {**built.model_dump(), "status": GateStatus.running}
    assert fast.status is GateStatus.running and not fast.terminal
    fast.status = GateStatus.allow
    assert fast.terminal


def test_a_fresh_process_can_build_a_gate_from_a_row_first_thing():
    """The first gate a new worker process builds from a row is readable (its mappers get configured)."""
    code = (
        "from worker.adapters.db import gate_from_row, deadline_from_now\n"
        "from worker.adapters.db.tables import GATE_COLUMNS\n"
        "row = dict.fromkeys(GATE_COLUMNS)\n"
        "row.update(id='g1', status='running', deadline=deadline_from_now(5))\n"
        "print(gate_from_row(row).id, gate_from_row(row).status.value)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stdout) == (0, "g1 running\n"), done.stderr


def test_a_new_gate_and_submission_have_their_constructors_defaults():
    """The intake's rows carry the same columns and defaults as ``Gate(...)`` and ``Submission(...)``."""
    deadline = deadline_from_now(60)
    built, fresh = Gate(**GIVEN, deadline=deadline), new_gate(**GIVEN, deadline=deadline)
    assert _without(fresh.model_dump(), MADE) == _without(built.model_dump(), MADE)
    assert fresh.id != built.id and fresh.created_at == fresh.updated_at
    assert fresh.status is GateStatus.pending and fresh.attempts == 0
    sub, plain = new_submission("c" * 64, ["g1", "g2"]), Submission(sha256="c" * 64, gate_ids='["g1", "g2"]')
    assert _without(sub.model_dump(), MADE) == _without(plain.model_dump(), MADE)
    assert sub.gates == ["g1", "g2"]


@pytest.mark.parametrize(
    "columns", [_without(GIVEN, {"size"}) | {"deadline": None}, {**GIVEN, "deadline": None, "colour": "red"}]
)
def test_a_new_gate_missing_or_misnaming_a_column_is_refused(columns):
    """Building a new gate without one of its columns, or with a stray one, fails at once."""
    with pytest.raises(TypeError):
        new_gate(**columns)
