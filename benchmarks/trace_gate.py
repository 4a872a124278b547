"""Where a lone gate's latency goes: per-stage timestamps of gates submitted one at a time.

    python benchmarks/trace_gate.py [--gates 150]

Same services and trivial policy as ``bench_gates.py`` (Redis broker + backend, Postgres,
local-folder store, one prefork worker process). The worker runs with the gate's step
functions and DB calls wrapped in timers (``--worker`` mode of this script: nothing in
``worker/`` is changed), plus Celery's task_prerun/postrun signals; each gate's timeline is
cut at every recorded start/end, from the producer's ``submit_artifact`` call to the
decision's ``decided_at``. It prints the median and count of each stage-to-stage step, longest
total first: what lies on a lone gate's critical path (``created -> task:canary.precheck>`` is
intake commit + broker + pool hand-off; ``task:X< -> task:Y>`` is Celery's hand-off between
tasks; the ``<``/``>`` suffixes mark a call's end/start).

Timers cost a few microseconds each; py-spy is not needed. Numbers are wall clock: say the
load average (printed) when quoting them.
"""

from __future__ import annotations

import argparse
import collections
import functools
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

TRACE_DIR_ENV = "CANARY_TRACE_DIR"


def traced_worker() -> None:
    """Run ``canary worker --concurrency=1`` with the gate's steps timed into ``$CANARY_TRACE_DIR``."""
    from celery.signals import task_postrun, task_prerun

    import worker.adapters.db as db
    import worker.pipeline.routing as routing
    import worker.pipeline.steps as gate
    import worker.tasks.gate as tasks
    from worker.cli import main

    out: list[str] = []
    folder = Path(os.environ[TRACE_DIR_ENV])

    def timed(owner: Any, name: str) -> None:
        func = getattr(owner, name)

        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            t0 = time.time()
            try:
                return func(*args, **kwargs)
            finally:
                out.append(f"{name} {t0:.6f} {time.time():.6f}\n")

        setattr(owner, name, wrapper)

    for name in ("begin_many", "precheck_step", "fan_out", "detect_many", "decide_many"):
        timed(tasks, name)
    for name in ("route_many", "judge", "load_artifact"):
        timed(gate, name)
    timed(routing, "publish_submissions")
    for name in ("get_many", "finish_many", "start_many", "mark_published_many"):
        timed(db.GateRepo, name)
    starts: dict[str, float] = {}

    @task_prerun.connect(weak=False)
    def _pre(task_id: str = "", **_: Any) -> None:
        starts[task_id] = time.time()

    @task_postrun.connect(weak=False)
    def _post(task_id: str = "", task: Any = None, **_: Any) -> None:
        out.append(f"task:{task.name} {starts.pop(task_id, 0.0):.6f} {time.time():.6f}\n")
        with (folder / f"trace-{os.getpid()}.txt").open("a") as fh:
            fh.writelines(out)
        out.clear()

    sys.argv = [
        "canary",
        "worker",
        "--concurrency=1",
        "--loglevel=WARNING",
        "--without-mingle",
        "--without-gossip",
    ]
    main()


def timelines(folder: Path, gates: list[tuple[float, float, float]]) -> dict[str, list[float]]:
    """Cut each gate's [submit, decided] window at every recorded start/end: step -> ms per gate."""
    events: list[tuple[float, float, str]] = []
    for path in folder.glob("trace-*.txt"):
        for line in path.read_text().splitlines():
            name, a, b = line.split()
            events.append((float(a), float(b), name))
    steps: dict[str, list[float]] = collections.defaultdict(list)
    for t_submit, created, decided in gates:
        marks = [("submit", t_submit), ("created", created), ("DECIDED", decided)]
        for a, b, name in events:
            if t_submit <= a <= decided:
                marks += [(f"{name}>", a), (f"{name}<", b)]
        marks.sort(key=lambda m: m[1])
        cut = [m for m in marks if m[1] <= decided]
        for (n1, a1), (n2, a2) in zip(cut, cut[1:], strict=False):
            steps[f"{n1} -> {n2}"].append((a2 - a1) * 1000)
    return steps


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--gates", type=int, default=150)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        traced_worker()
        return

    from celery import Celery
    from tests.benchmarks.bench_gates import POLICY, bench_env, reset, wait_all

    from tests.integration.services import database_url
    from worker.pipeline.intake import submit_artifact
    from worker.pipeline.runtime import build_runtime
    from worker.settings import Settings

    db = database_url().rsplit("/", 1)[0] + "/canary_trace"
    tmp, env = bench_env("trace", db, redis_dbs=(13, 14))
    env |= {
        TRACE_DIR_ENV: str(tmp),
    }
    os.environ.update(env)
    reset(env)
    rt = build_runtime(Settings(), role="bench")
    app = Celery(broker=env["CANARY_BROKER_URL"])
    print(f"# load average before: {os.getloadavg()[0]:.2f}")
    log = (tmp / "worker.log").open("wb")
    proc = subprocess.Popen(
        [sys.executable, __file__, "--worker"],
        cwd=ROOT,
        env={**os.environ, **env},
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    gates: list[tuple[float, float, float]] = []
    latencies: list[float] = []
    try:
        with app.producer_or_acquire() as producer:

            def enqueue(gate_id: str) -> None:
                app.send_task("canary.precheck", (gate_id,), producer=producer, queue="canary.trace")

            for i in range(args.gates + 5):
                t_submit = time.time()
                gid = submit_artifact(rt, f"trace {t_submit} {i}".encode(), [POLICY], enqueue).gates[0].id
                wait_all(rt.repo, [gid], timeout=60)
                row = rt.repo.get(gid)
                if i >= 5:  # the first few warm the worker up
                    gates.append((t_submit, row.created_at.timestamp(), row.decided_at.timestamp()))
                    timings = json.loads(row.report or "{}").get("timings", {})
                    latencies.append((row.decided_at - row.created_at).total_seconds() * 1000)
                    assert timings, "report without timings"
                time.sleep(0.01)
    finally:
        os.killpg(proc.pid, 15)
        proc.wait(timeout=30)
        log.close()
    steps = timelines(tmp, gates)
    print(
        f"# {len(gates)} lone gates, latency (created -> decided) p50 {statistics.median(latencies):.2f} ms"
    )
    print("  p50-ms  gates  step")
    for name, ms in sorted(steps.items(), key=lambda kv: -statistics.median(kv[1]) * len(kv[1])):
        if len(ms) >= len(gates) // 2:
            print(f"{statistics.median(ms):8.2f}  {len(ms):5d}  {name}")
    print(f"# load average after: {os.getloadavg()[0]:.2f}")
    reset(env)


if __name__ == "__main__":
    main()
