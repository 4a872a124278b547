"""Foreign errors stop at the adapters, and the broker carries gate refs, never rows."""

from __future__ import annotations

import pickle
import socket

import pytest

from worker.adapters.db import GateRepo, make_engine
from worker.adapters.storage import S3Store
from worker.core.errors import CanaryError, DatabaseError, DatabaseUnavailableError, StorageError
from worker.pipeline.ref import GateRef

REF = GateRef(
    id="g1",
    policy_ref="trivial",
    policy_id="trivial",
    policy_sha256="0" * 64,
    sha256="1" * 64,
    object_key="sha256/11/" + "1" * 64,
    size=3,
)


def closed_port() -> int:
    """A loopback port nothing listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_an_unreachable_database_is_a_database_unavailable_error():
    """A database that refuses the connection surfaces as DatabaseUnavailableError, not the driver's error."""
    with pytest.raises(DatabaseUnavailableError, match="database unavailable"):
        make_engine(f"postgresql+psycopg://postgres@127.0.0.1:{closed_port()}/nowhere")


def test_a_failed_statement_is_a_database_error(tmp_path):
    """A statement the database refuses (its table is gone) is a DatabaseError under the root."""
    repo = GateRepo(make_engine(f"sqlite:///{tmp_path / 'gates.db'}"))
    with repo.engine.begin() as conn:
        conn.exec_driver_sql("DROP TABLE audit_events")
    with pytest.raises(DatabaseError) as caught:
        repo.audit_trail("g1")
    assert isinstance(caught.value, CanaryError)


def test_database_errors_survive_a_pickle_round_trip():
    """Celery pickles a task's exception: the database errors come back with their message."""
    for exc in (DatabaseError("refused"), DatabaseUnavailableError("gone")):
        back = pickle.loads(pickle.dumps(exc))
        assert type(back) is type(exc) and str(back) == str(exc)


def test_an_unreachable_object_store_is_a_storage_error():
    """Asking an S3 endpoint that cannot be reached whether a key exists is a StorageError, not "absent"."""
    import boto3
    from botocore.config import Config

    client = boto3.client(
        "s3",
        endpoint_url=f"http://127.0.0.1:{closed_port()}",
        aws_access_key_id="test",
        aws_secret_access_key="test",
        region_name="us-east-1",
        config=Config(retries={"max_attempts": 1}, connect_timeout=1),
    )
    store = S3Store("nowhere", client=client)
    with pytest.raises(StorageError):
        store.exists("sha256/00/key")


def test_a_gate_ref_travels_as_a_plain_dict_and_comes_back_equal():
    """The message a detect subtask gets is JSON-able and parses back to the same frozen ref."""
    message = REF.to_message()
    assert all(isinstance(v, str | int) for v in message.values())
    assert GateRef.from_message(message) == REF
    with pytest.raises(ValueError):
        setattr(REF, "size", 4)  # noqa: B010 - frozen: assignment is refused


def test_an_off_shape_ref_is_dropped_not_guessed():
    """A message missing a field, or carrying a stranger one, yields no ref (that gate gets no vote)."""
    message = REF.to_message()
    assert GateRef.from_message({k: v for k, v in message.items() if k != "sha256"}) is None
    assert GateRef.from_message({**message, "extra": 1}) is None
    assert GateRef.from_message(["not", "a", "mapping"]) is None
