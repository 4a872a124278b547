"""Coordination benchmark: gates/s and per-gate overhead with trivial detectors.

Real parts: Redis broker + result backend, Postgres gate rows, `canary worker`
processes (prefork). Detectors are the fixed-answer `static` kind, so what is
measured is the spine: intake, pre-check task, chord of 3 detect tasks, quorum
callback, routing, audit.

    python benchmarks/bench_gates.py [--gates 1000] [--workers 1 2] [--batch 1 32] [--s3]

For each worker count (``--concurrency``) and intake batch size it prints:

- gates/s: ``--gates`` artifacts are submitted first (``worker.pipeline.intake.submit_many``,
  ``batch`` gates per pre-check message; batch 1 = one message and one chord per gate),
  then the worker is started; throughput = gates / (last decision - first gate started).
- worker-cpu-ms/gate: user+system CPU of the worker's main process and pool children over
  that same window, divided by the number of gates. The CPU cost of coordination per gate,
  insensitive to other load on the machine.
- alone-p50/p95-ms: end-to-end latency (gate row created -> decision recorded) of a gate
  submitted alone into an idle worker (``submit_artifact``, a batch of one), ``--alone``
  times.
- overhead-p50-ms: the per-gate coordination overhead of a lone gate, p50 over the same
  gates of (latency - the gate's own pre-check and detector time from its report, i.e.
  ``precheck_ms + detectors_ms``). With trivial detectors that time is a few microseconds, so
  this is what the spine (intake, broker, chord, database, routing) adds to a gate.

It also prints (unless ``--no-floor``), per worker count, the same task shape with no gate work
(``celery_floor.py``: 1 + 3 + 1 no-op tasks as a chord, same Celery settings, same prefork
worker): its p50/p95 latency and the worker's CPU per chord (over ``--gates`` chords run back
to back): the part of a lone gate's latency and CPU that is Celery's own. ``ours-p50-ms`` is
overhead-p50 minus the floor's p50 and ``ours-cpu-ms`` is batch-1 worker CPU per gate minus the
floor's CPU per chord: what this project's code adds on top of Celery.

Wall-clock figures (gates/s, latencies) degrade when other processes load the cores (the load
average is printed); CPU per gate is the figure that does not.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.integration.services import (  # noqa: E402
    check_postgres,
    check_redis,
    database_url,
    free_port,
    redis_url,
    start_moto_server,
    stop_process,
)

POLICY = str(ROOT / "tests" / "fixtures" / "policies" / "trivial.yaml")


def reset(env: dict[str, str]) -> None:
    import redis
    from sqlalchemy import text

    from worker.adapters.db import make_engine

    for url in (env["CANARY_BROKER_URL"], env["CANARY_RESULT_BACKEND"]):
        redis.Redis.from_url(url).flushdb()
    engine = make_engine(env["CANARY_DATABASE_URL"])
    with engine.begin() as conn:
        conn.execute(text("TRUNCATE gates, submissions, audit_events"))
    engine.dispose()


def ensure_database(url: str) -> None:
    """Create the benchmark's own database (so tests running meanwhile cannot truncate it)."""
    import psycopg

    name = url.rsplit("/", 1)[1]
    admin = url.rsplit("/", 1)[0].replace("postgresql+psycopg", "postgresql") + "/postgres"
    with psycopg.connect(admin, autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone():
            conn.execute(f'CREATE DATABASE "{name}"')


def bench_env(name: str, db: str, redis_dbs: tuple[int, int]) -> tuple[Path, dict[str, str]]:
    """A scratch folder and the ``CANARY_*`` settings of a benchmark run on its own Redis dbs and queues.

    Exits with the problem when Redis or Postgres does not answer.
    """
    broker = redis_url()
    ensure_database(db)
    for problem in (check_redis(broker), check_postgres(db)):
        if problem:
            sys.exit(f"{name}: {problem}")
    base = broker.rsplit("/", 1)[0]
    tmp = Path(tempfile.mkdtemp(prefix=f"canary-{name}-"))
    return tmp, {
        "CANARY_BROKER_URL": f"{base}/{redis_dbs[0]}",
        "CANARY_RESULT_BACKEND": f"{base}/{redis_dbs[1]}",
        "CANARY_DATABASE_URL": db,
        "CANARY_DATA_DIR": str(tmp / "data"),
        "CANARY_OBJECT_STORE": "local",
        "CANARY_TASK_QUEUE": f"canary.{name}",
        "CANARY_PRELOAD": "false",
        "CANARY_ALLOWED_QUEUE": f"canary.{name}.allowed",
        "CANARY_REVIEW_QUEUE": f"canary.{name}.review",
    }


def start_worker(env: dict[str, str], workers: int, log: Path) -> subprocess.Popen[bytes]:
    fh = log.open("wb")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "worker",
            "worker",
            f"--concurrency={workers}",
            "--loglevel=WARNING",
            "--without-mingle",
            "--without-gossip",
        ],
        cwd=ROOT,
        env={**os.environ, **env},
        stdout=fh,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    return proc


def wait_all(repo, ids: list[str], timeout: float = 600) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        gates = repo.get_many(ids)
        if all(g.terminal for g in gates.values()) and len(gates) == len(ids):
            return
        time.sleep(0.05)
    raise TimeoutError("gates did not finish")


def first_running(repo):
    from sqlalchemy import text

    with repo.engine.connect() as conn:
        return conn.execute(text("SELECT min(at) FROM audit_events WHERE event = 'running'")).scalar_one()


def cpu_seconds(pid: int) -> float:
    """User+system CPU of a process and its children (the prefork pool), from /proc."""
    total = 0.0
    tick = os.sysconf("SC_CLK_TCK")
    pids = [pid] + [
        int(p)
        for p in subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout.split()
    ]
    for p in pids:
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / tick
        except (OSError, IndexError):
            pass
    return total


def wait_first_running(repo, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while first_running(repo) is None:
        if time.monotonic() > deadline:
            raise TimeoutError("the worker did not start any gate")
        time.sleep(0.005)


def run(env: dict[str, str], workers: int, batch: int, n: int, alone: int, tmp: Path) -> dict[str, float]:
    from celery import Celery

    from worker.pipeline.intake import submit_artifact, submit_many
    from worker.pipeline.runtime import build_runtime
    from worker.settings import Settings

    os.environ.update(env)
    reset(env)
    settings = Settings()
    rt = build_runtime(settings, role="bench")
    app = Celery(broker=env["CANARY_BROKER_URL"])
    with app.producer_or_acquire() as producer:

        def enqueue(gate_ids: str | list[str]) -> None:
            app.send_task("canary.precheck", (gate_ids,), producer=producer, queue=settings.task_queue)

        t0 = time.perf_counter()
        items = ((f"bench-{i}", f"bench artifact {i}".encode()) for i in range(n))
        ids = [s.gates[0].id for s in submit_many(rt, items, [POLICY], enqueue, batch_size=batch)]
        intake_s = time.perf_counter() - t0

        log = tmp / f"worker-{workers}-{batch}.log"
        proc = start_worker(env, workers, log)
        try:
            wait_first_running(rt.repo)
            cpu0 = cpu_seconds(proc.pid)
            wait_all(rt.repo, ids)
            cpu1 = cpu_seconds(proc.pid)
            gates = rt.repo.get_many(ids).values()
            first = first_running(rt.repo)
            last = max(g.decided_at for g in gates)
            wall = (last - first).total_seconds()
            statuses = {g.status for g in gates}

            latencies, overheads = [], []
            for i in range(alone):
                gid = (
                    submit_artifact(rt, f"alone {workers} {batch} {i}".encode(), [POLICY], enqueue)
                    .gates[0]
                    .id
                )
                wait_all(rt.repo, [gid], timeout=30)
                g = rt.repo.get(gid)
                latency = (g.decided_at - g.created_at).total_seconds() * 1000
                timings = json.loads(g.report or "{}").get("timings", {})
                own = float(timings.get("precheck_ms", 0.0)) + float(timings.get("detectors_ms", 0.0))
                latencies.append(latency)
                overheads.append(latency - own)
                time.sleep(0.01)
        finally:
            os.killpg(proc.pid, 15)
            proc.wait(timeout=30)
    latencies.sort()
    return {
        "workers": workers,
        "batch": batch,
        "gates": n,
        "gates_per_s": n / wall,
        "intake_per_s": n / intake_s,
        "cpu_ms_per_gate": (cpu1 - cpu0) * 1000 / n,
        "alone_p50_ms": statistics.median(latencies),
        "alone_p95_ms": latencies[int(0.95 * (len(latencies) - 1))],
        "overhead_p50_ms": statistics.median(overheads),
        "statuses": ",".join(sorted(statuses)),
    }


def floor(
    env: dict[str, str], workers: int, samples: int, chords: int, tmp: Path
) -> tuple[float, float, float, float]:
    """p50/p95 ms of an empty 1 + 3 + 1 chord on a worker of the bare floor app, one at a time,
    the worker's CPU ms per chord over ``chords`` chords sent at once, and the p50 ms of one
    empty task (send -> ran): the least any layout with a Celery task in it could take."""
    import uuid

    import redis

    os.environ.update(env)
    reset(env)
    log = (tmp / f"floor-{workers}.log").open("wb")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "tests.benchmarks.celery_floor",
            "worker",
            "--pool=prefork",
            f"--concurrency={workers}",
            "--loglevel=WARNING",
            "--without-mingle",
            "--without-gossip",
            "-Q",
            env["CANARY_TASK_QUEUE"],
        ],
        cwd=ROOT,
        env={**os.environ, **env},
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        from tests.benchmarks.celery_floor import app, done, start

        stamps = redis.Redis.from_url(env["CANARY_RESULT_BACKEND"])

        def sample(send: Any) -> list[float]:
            out = []
            for i in range(samples + 5):
                key = f"floor:{uuid.uuid4().hex}"
                t0 = time.time()
                send(key)
                got = stamps.blpop([key], timeout=60)
                if got is None:
                    raise TimeoutError("the floor worker did not answer")
                if i >= 5:  # the first few warm the worker up
                    out.append((float(got[1]) - t0) * 1000)
                time.sleep(0.01)
            return sorted(out)

        queue = env["CANARY_TASK_QUEUE"]
        latencies = sample(lambda key: start.apply_async((key,), queue=queue))
        single = sample(lambda key: done.apply_async(([],), {"key": key}, queue=queue))
        key = f"floor:{uuid.uuid4().hex}"
        cpu0 = cpu_seconds(proc.pid)
        with app.producer_or_acquire() as producer:
            for _ in range(chords):
                start.apply_async((key,), queue=env["CANARY_TASK_QUEUE"], producer=producer)
        for _ in range(chords):
            if stamps.blpop([key], timeout=120) is None:
                raise TimeoutError("the floor worker did not finish")
        cpu_ms = (cpu_seconds(proc.pid) - cpu0) * 1000 / chords
        app.close()
    finally:
        os.killpg(proc.pid, 15)
        proc.wait(timeout=30)
        log.close()
    p95 = latencies[int(0.95 * (len(latencies) - 1))]
    return statistics.median(latencies), p95, cpu_ms, statistics.median(single)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--gates", type=int, default=1000)
    parser.add_argument("--alone", type=int, default=100, help="gates submitted one at a time for latency")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument(
        "--batch", type=int, nargs="+", default=[1, 32], help="gates per pre-check message at intake"
    )
    parser.add_argument(
        "--s3", action="store_true", help="object store on a moto S3 server instead of a folder"
    )
    parser.add_argument(
        "--no-floor",
        action="store_true",
        help="skip timing the empty 1+3+1 Celery chord (Celery's own share)",
    )
    args = parser.parse_args()

    db = os.environ.get("CANARY_BENCH_DATABASE_URL", database_url().rsplit("/", 1)[0] + "/canary_bench")
    tmp, env = bench_env("bench", db, redis_dbs=(11, 12))
    moto = None
    if args.s3:
        port = free_port()
        moto = start_moto_server(port)
        env.update(
            {
                "CANARY_OBJECT_STORE": "s3",
                "CANARY_S3_ENDPOINT_URL": f"http://127.0.0.1:{port}",
                "AWS_ACCESS_KEY_ID": "bench",
                "AWS_SECRET_ACCESS_KEY": "bench",
                "AWS_DEFAULT_REGION": "us-east-1",
            }
        )
    try:
        store = "S3 (moto server)" if args.s3 else "local folder"
        print(f"# Redis broker+backend, Postgres rows, object store: {store}; trivial static detectors")
        print(
            f"# machine: {os.cpu_count()} cores; {args.gates} gates saturated, {args.alone} submitted alone"
        )
        print(f"# load average before: {os.getloadavg()[0]:.2f} (other processes share these cores)")
        print(
            "workers  batch  gates/s  intake/s  worker-cpu-ms/gate  alone-p50-ms  alone-p95-ms  "
            "overhead-p50-ms  decisions"
        )
        results = []
        for w in args.workers:
            for b in args.batch:
                r = run(env, w, b, args.gates, args.alone, tmp)
                results.append(r)
                print(
                    f"{r['workers']:>7}  {r['batch']:>5}  {r['gates_per_s']:7.1f}  {r['intake_per_s']:8.1f}  "
                    f"{r['cpu_ms_per_gate']:18.2f}  {r['alone_p50_ms']:12.2f}  {r['alone_p95_ms']:12.2f}  "
                    f"{r['overhead_p50_ms']:15.2f}  {r['statuses']}",
                    flush=True,
                )
        if not args.no_floor:
            print(
                "workers  celery-floor-p50-ms  celery-floor-p95-ms  floor-cpu-ms/chord  ours-p50-ms  ours-cpu-ms"
                "  one-task-p50-ms   (empty 1+3+1 chord, same settings; ours = batch-1 gate minus floor;"
                " one task = a single empty task)"
            )
            for w in args.workers:
                p50, p95, cpu, one = floor(env, w, args.alone, args.gates, tmp)
                mine = [r for r in results if r["workers"] == w and r["batch"] == 1]
                ours_p50 = f"{mine[0]['overhead_p50_ms'] - p50:11.2f}" if mine else f"{'-':>11}"
                ours_cpu = f"{mine[0]['cpu_ms_per_gate'] - cpu:11.2f}" if mine else f"{'-':>11}"
                print(
                    f"{w:>7}  {p50:19.2f}  {p95:19.2f}  {cpu:18.2f}  {ours_p50}  {ours_cpu}  {one:15.2f}",
                    flush=True,
                )
        print(f"# load average after: {os.getloadavg()[0]:.2f}")
        reset(env)
    finally:
        if moto is not None:
            stop_process(moto)


if __name__ == "__main__":
    main()
