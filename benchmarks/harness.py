"""What the benchmark scripts share: the repository on ``sys.path``, the datasets, clocks, the
"figure vs target" line, ``canary eval`` runs, and the real services (Redis, Postgres, Celery
worker processes, waited for by a readiness probe).

A script run as ``python benchmarks/NAME.py`` has this folder on ``sys.path``; ``import harness``
first puts the repository root there too, so the scripts import ``worker``, ``policies`` and
``producers`` from the checkout they sit in.

Datasets: ``CANARY_DATASETS_DIR``, default ``../shared/datasets`` beside the repository.

Services (``bench_gates.py``, ``trace_gate.py``): Redis at ``CANARY_BENCH_REDIS_URL`` (default
``CANARY_TEST_REDIS_URL``, then ``redis://127.0.0.1:6379/15``) is broker and result backend;
Postgres at ``CANARY_BENCH_DATABASE_URL`` (default: the test database's name with ``_bench``
appended, created when missing) holds the gate rows. A run flushes that one Redis db and
truncates that database's tables, and nothing else.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.integration.services import (  # noqa: E402
    check_postgres,
    check_redis,
    database_url,
    libpq_url,
    redis_url,
)

TRIVIAL_POLICY = str(ROOT / "tests" / "fixtures" / "policies" / "trivial.yaml")


# -- datasets ------------------------------------------------------------------------------------


def datasets_dir() -> Path:
    """The labelled datasets: ``CANARY_DATASETS_DIR``, else ``../shared/datasets`` beside the repo."""
    return Path(os.environ.get("CANARY_DATASETS_DIR") or ROOT.parent / "shared" / "datasets")


def split_path(policy: str, split: str = "dev") -> Path:
    """The gzipped JSON-lines file of one policy's split (``train`` or ``dev``)."""
    return datasets_dir() / policy / f"{split}.jsonl.gz"


def read_records(path: Path) -> Iterator[dict[str, Any]]:
    """The records of a JSON-lines file, gzipped (``.gz``) or not; blank lines skipped."""
    opener: Any = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as lines:
        for line in lines:
            if line.strip():
                yield json.loads(line)


def write_records(path: Path, records: Iterator[dict[str, Any]] | list[dict[str, Any]]) -> Path:
    """Write records as JSON lines (gzipped when ``path`` ends in ``.gz``); returns ``path``."""
    opener: Any = gzip.open if path.suffix == ".gz" else open
    with opener(path, "wt", encoding="utf-8") as out:
        for record in records:
            out.write(json.dumps(record) + "\n")
    return path


def harmless_texts(policy: str, split: str = "train") -> list[str]:
    """The texts of the harmless records of one policy's split."""
    return [r["text"] for r in read_records(split_path(policy, split)) if r["label"] == "harmless"]


# -- command line --------------------------------------------------------------------------------


def arguments(doc: str | None) -> argparse.ArgumentParser:
    """An argument parser whose ``--help`` shows the script's docstring as written."""
    return argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)


# -- clocks and figures --------------------------------------------------------------------------


def percentile(values: Sequence[float], q: float) -> float:
    """The nearest-rank ``q`` quantile (0 < q <= 1) of ``values``."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered)) - 1))]


def cpu_seconds(pid: int) -> float:
    """User+system CPU seconds of a process and its direct children (a prefork pool), from /proc."""
    tick = os.sysconf("SC_CLK_TCK")
    children = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout.split()
    total = 0.0
    for p in [pid, *map(int, children)]:
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / tick
        except (OSError, IndexError):
            pass  # a child that exited meanwhile
    return total


def load_average() -> str:
    """The 1/5/15-minute load averages: wall-clock figures are only as good as an idle machine."""
    return ", ".join(f"{x:.2f}" for x in os.getloadavg())


def machine_line() -> str:
    """One line naming the machine a figure was measured on (cores, CPU model, load)."""
    model = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"# {os.cpu_count()} cores, {model}; load average {load_average()}"


def target(
    what: str, figure: float, unit: str, *, at_least: float | None = None, at_most: float | None = None
) -> bool:
    """Print ``what: figure unit  (target >= x)  met | NOT MET`` and return whether it is met."""
    if at_least is not None:
        met, bound = figure >= at_least, f">= {at_least:g}"
    elif at_most is not None:
        met, bound = figure <= at_most, f"<= {at_most:g}"
    else:
        raise ValueError("a target needs at_least or at_most")
    print(f"TARGET {what}: {figure:.1f} {unit}  (target {bound} {unit})  {'met' if met else 'NOT MET'}")
    return met


# -- canary eval ---------------------------------------------------------------------------------

SHIPPED_SETUPS = ("rules,lexical,semantic", "rules", "lexical", "semantic")


def evaluate(path: Path, policy: str, setups: Sequence[str] = SHIPPED_SETUPS) -> list[dict[str, Any]]:
    """``canary eval --json`` of ``path`` under ``policy``: one summary dict per detector setup."""
    args = [sys.executable, "-m", "worker", "eval", "--policy", policy, "--json"]
    for setup in setups:
        args += ["-d", setup]
    done = subprocess.run([*args, str(path)], capture_output=True, text=True, cwd=ROOT, check=True)
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


def evaluate_records(
    records: list[dict[str, Any]], policy: str, setups: Sequence[str] = SHIPPED_SETUPS
) -> list[dict[str, Any]]:
    """:func:`evaluate` of ``records``, written to a scratch file that is gone afterwards."""
    with tempfile.TemporaryDirectory(prefix="canary-eval-") as scratch:
        return evaluate(write_records(Path(scratch) / "records.jsonl", records), policy, setups)


# -- services ------------------------------------------------------------------------------------


def bench_redis_url() -> str:
    """The one Redis db a benchmark uses as broker and backend, and flushes."""
    return os.environ.get("CANARY_BENCH_REDIS_URL") or redis_url()


def bench_database_url() -> str:
    """The Postgres database a benchmark writes gate rows to, and truncates."""
    return os.environ.get("CANARY_BENCH_DATABASE_URL") or database_url() + "_bench"


def ensure_database(url: str) -> None:
    """Create the database named by ``url`` when it does not exist yet."""
    import psycopg

    server, name = libpq_url(url).rsplit("/", 1)
    with psycopg.connect(f"{server}/postgres", autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone():
            conn.execute(f'CREATE DATABASE "{name}"')


@dataclass
class Services:
    """A scratch folder and the ``CANARY_*`` settings of a run on its own queues."""

    name: str
    tmp: Path
    env: dict[str, str] = field(default_factory=dict)

    def flush(self) -> None:
        """Empty the benchmark's Redis db (broker and backend) and its gate tables."""
        import redis

        redis.Redis.from_url(self.env["CANARY_BROKER_URL"]).flushdb()
        self.truncate()

    def truncate(self) -> None:
        """Empty the gate tables (the schema is created by the first runtime built on them)."""
        from sqlalchemy import inspect, text

        from worker.adapters.db import make_engine

        engine = make_engine(self.env["CANARY_DATABASE_URL"])
        tables = set(inspect(engine).get_table_names()) & {
            "gates",
            "submissions",
            "audit_events",
            "fetches",
            "release_gates",
        }
        if tables:
            with engine.begin() as conn:
                conn.execute(text(f"TRUNCATE {', '.join(sorted(tables))}"))
        engine.dispose()


def services(name: str) -> Services:
    """The settings of a benchmark run on real Redis and Postgres; exits naming what is down."""
    broker, db = bench_redis_url(), bench_database_url()
    problem = check_redis(broker) or check_postgres(db.rsplit("/", 1)[0] + "/postgres")
    if problem:
        sys.exit(f"{name}: {problem}")
    ensure_database(db)
    tmp = Path(tempfile.mkdtemp(prefix=f"canary-{name}-"))
    env = {
        "CANARY_BROKER_URL": broker,
        "CANARY_RESULT_BACKEND": broker,
        "CANARY_DATABASE_URL": db,
        "CANARY_DATA_DIR": str(tmp / "data"),
        "CANARY_OBJECT_STORE": "local",
        "CANARY_TASK_QUEUE": f"canary.{name}",
        "CANARY_FETCH_QUEUE": f"canary.{name}.fetch",
        "CANARY_PRELOAD": "false",
        "CANARY_METRICS_PORT": "0",
        "CANARY_ALLOWED_QUEUE": f"canary.{name}.allowed",
        "CANARY_REVIEW_QUEUE": f"canary.{name}.review",
    }
    os.environ.update(env)
    return Services(name, tmp, env)


class WorkerProcess:
    """A Celery worker started in its own session, found ready by answering a control ping."""

    def __init__(self, argv: list[str], env: dict[str, str], log: Path) -> None:
        self.hostname = f"bench-{uuid.uuid4().hex[:12]}@localhost"
        self.broker = env["CANARY_BROKER_URL"]
        self.log = log
        with log.open("wb") as out:
            self.proc = subprocess.Popen(
                [*argv, f"--hostname={self.hostname}", "--without-mingle", "--without-gossip"],
                cwd=ROOT,
                env={**os.environ, **env},
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    @property
    def pid(self) -> int:
        return self.proc.pid

    def wait_ready(self, timeout: float = 600.0) -> float:
        """Seconds until the worker answered a ping (it consumes tasks from then on).

        Raises with the log's tail when the worker exits or stays silent for ``timeout`` s.
        """
        return self._until_answered(
            lambda control: control.ping(destination=[self.hostname], timeout=0.5), timeout, "gave no answer"
        )

    def consume(self, queue: str, timeout: float = 60.0) -> None:
        """Tell the worker to start consuming ``queue`` as well (Celery's ``add_consumer``), once it
        answers: a worker started on an idle queue does its start-up first, then the work."""
        self._until_answered(
            lambda control: control.add_consumer(queue, destination=[self.hostname], reply=True, timeout=1.0),
            timeout,
            f"did not take queue {queue}",
        )

    def _until_answered(self, ask: Callable[[Any], Any], timeout: float, silent: str) -> float:
        """Seconds until ``ask(control)`` got a reply from the worker; raises with the log's tail
        when the worker exits or gives none for ``timeout`` s."""
        from celery import Celery

        started = time.monotonic()
        probe = Celery(broker=self.broker)
        try:
            while time.monotonic() - started < timeout:
                if self.proc.poll() is not None:
                    raise RuntimeError(f"worker exited with {self.proc.returncode}: {self.tail()}")
                if ask(probe.control):
                    return time.monotonic() - started
            raise TimeoutError(f"worker {silent} in {timeout:.0f} s: {self.tail()}")
        finally:
            probe.close()

    def tail(self, lines: int = 20) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])

    def stop(self) -> None:
        """SIGTERM the worker's process group (its pool with it) and wait for it."""
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, 15)
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, 9)
            self.proc.wait(timeout=30)


def canary_worker(
    env: dict[str, str], concurrency: int, log: Path, queues: str | None = None
) -> WorkerProcess:
    """``canary worker`` (prefork) on the run's queues (``queues``: another list, e.g. an idle one)."""
    argv = [sys.executable, "-m", "worker", "worker", f"--concurrency={concurrency}", "--loglevel=WARNING"]
    return WorkerProcess([*argv, f"--queues={queues}"] if queues else argv, env, log)


def wait_gates(repo: Any, ids: list[str], timeout: float = 600.0) -> None:
    """Return once every gate of ``ids`` is terminal; TimeoutError after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        gates = repo.get_many(ids)
        if len(gates) == len(ids) and all(g.terminal for g in gates.values()):
            return
        time.sleep(0.02)
    raise TimeoutError(f"{len(ids)} gates not decided in {timeout:.0f} s")
