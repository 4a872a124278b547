"""A gate table from before a column was added still works after the upgrade adds it."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta

import pytest
from sqlalchemy import create_engine, text

from tests.integration.services import check_postgres, database_url, require

pytestmark = pytest.mark.integration


def test_a_column_added_to_an_old_table_does_not_shift_the_started_gates():
    """Starting gates on Postgres reads each column by name, though ALTER TABLE put `claim` last."""
    from worker.adapters.db import Gate, GateRepo, make_engine, utcnow

    url = database_url()
    require(check_postgres(url) is None, f"postgres: {check_postgres(url)}")
    base, _, name = url.rpartition("/")
    database = f"{name.split('?')[0]}_upgrade_{uuid.uuid4().hex[:8]}"  # beside the test database
    admin = create_engine(url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{database}"'))
    try:
        scoped = f"{base}/{database}"
        old = make_engine(scoped)
        with old.begin() as conn:
            conn.execute(text("ALTER TABLE gates DROP COLUMN claim"))  # the table as first released
        old.dispose()
        repo = GateRepo(make_engine(scoped))  # the upgrade: `claim` added, last in the table
        fresh = Gate(
            sha256="a" * 64,
            object_key="k",
            size=1,
            policy_ref="p",
            policy_id="p",
            policy_version="1",
            policy_sha256="0" * 64,
            deadline=utcnow() + timedelta(seconds=60),
        )
        gates, _, _ = repo.register([fresh], "test")
        started = repo.start_many([gates[0].id], "test", claim="message-1")
        assert [g.id for g in started] == [gates[0].id]
        assert isinstance(started[0].deadline, datetime) and started[0].claim == "message-1"
        repo.engine.dispose()
        repo.autocommit_engine.dispose()
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)'))
        admin.dispose()
