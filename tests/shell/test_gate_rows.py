"""Gate rows built as the ORM loads them (``gate_from_row``): the same gate as a validated one."""

from __future__ import annotations

import subprocess
import sys

from worker.adapters.db import Gate, GateStatus, deadline_from_now, gate_from_row
from worker.adapters.db.tables import GATE_COLUMNS


def _gate() -> Gate:
    return Gate(
        sha256="a" * 64,
        object_key="objects/a",
        size=3,
        policy_ref="trivial",
        policy_id="trivial",
        policy_version="1",
        policy_sha256="b" * 64,
        deadline=deadline_from_now(60),
    )


def test_a_row_built_gate_equals_the_validated_one_and_takes_updates():
    """A gate built from a row's columns reads and updates as one built through its constructor."""
    built = _gate()
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
