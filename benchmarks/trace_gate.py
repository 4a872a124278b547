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
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from harness import (
    TRIVIAL_POLICY,
    WorkerProcess,
    arguments,
    load_average,
    services,
    wait_gates,
)

TRACE_DIR_ENV = "CANARY_TRACE_DIR"


STEPS = (
    "begin_many",
    "precheck_step",
    "fan_out",
    "detect_many",
    "decide_many",
    "route_many",
    "publish_submissions",
    "judge",
    "load_artifact",
)
REPO_CALLS = ("get_many", "finish_many", "start_many", "mark_published_many")


def traced_worker(extra: list[str]) -> None:
    """Run ``canary worker --concurrency=1`` with the gate's steps timed into ``$CANARY_TRACE_DIR``."""
    from celery.signals import task_postrun, task_prerun

    import worker.adapters.db as db
    import worker.pipeline.routing as routing
    import worker.pipeline.steps as steps
    import worker.tasks.gate as tasks
    from worker.cli import main

    out: list[str] = []
    folder = Path(os.environ[TRACE_DIR_ENV])

    def timed(owners: tuple[Any, ...], name: str) -> None:
        """Wrap ``name`` in every owner that holds it (a step is imported by name into the tasks)."""
        holders = [o for o in owners if hasattr(o, name)]
        if not holders:
            raise SystemExit(f"trace_gate: no step named {name} any more; update STEPS")
        func = getattr(holders[0], name)

        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            t0 = time.time()
            try:
                return func(*args, **kwargs)
            finally:
                out.append(f"{name} {t0:.6f} {time.time():.6f}\n")

        for owner in holders:
            if getattr(owner, name) is func:
                setattr(owner, name, wrapper)

    for name in STEPS:
        timed((steps, routing, tasks), name)
    for name in REPO_CALLS:
        timed((db.GateRepo,), name)
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

    sys.argv = ["canary", "worker", "--concurrency=1", "--loglevel=WARNING", *extra]
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
    parser = arguments(__doc__)
    parser.add_argument("--gates", type=int, default=150)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args, extra = parser.parse_known_args()
    if args.worker:
        traced_worker(extra)
        return

    from celery import Celery

    from worker.pipeline.intake import submit_artifact
    from worker.pipeline.runtime import build_runtime
    from worker.settings import Settings

    svc = services("trace")
    svc.env[TRACE_DIR_ENV] = str(svc.tmp)
    os.environ.update(svc.env)
    svc.flush()
    rt = build_runtime(Settings(), role="bench")
    app = Celery(broker=svc.env["CANARY_BROKER_URL"])
    print(f"# load average before: {load_average()}")
    proc = WorkerProcess([sys.executable, __file__, "--worker"], svc.env, svc.tmp / "worker.log")
    gates: list[tuple[float, float, float]] = []
    latencies: list[float] = []
    try:
        proc.wait_ready()
        with app.producer_or_acquire() as producer:

            def enqueue(gate_id: str) -> None:
                app.send_task(
                    "canary.precheck", (gate_id,), producer=producer, queue=svc.env["CANARY_TASK_QUEUE"]
                )

            for i in range(args.gates + 5):
                t_submit = time.time()
                gid = (
                    submit_artifact(rt, f"trace {t_submit} {i}".encode(), [TRIVIAL_POLICY], enqueue)
                    .gates[0]
                    .id
                )
                wait_gates(rt.repo, [gid], timeout=120)
                row = rt.repo.get(gid)
                if i >= 5:  # the first few warm the worker up
                    gates.append((t_submit, row.created_at.timestamp(), row.decided_at.timestamp()))
                    latencies.append((row.decided_at - row.created_at).total_seconds() * 1000)
                time.sleep(0.01)
    finally:
        proc.stop()
    tmp = svc.tmp
    steps = timelines(tmp, gates)
    print(
        f"# {len(gates)} lone gates, latency (created -> decided) p50 {statistics.median(latencies):.2f} ms"
    )
    print("  p50-ms  gates  step")
    for name, ms in sorted(steps.items(), key=lambda kv: -statistics.median(kv[1]) * len(kv[1])):
        if len(ms) >= len(gates) // 2:
            print(f"{statistics.median(ms):8.2f}  {len(ms):5d}  {name}")
    print(f"# load average after: {load_average()}")
    svc.flush()


if __name__ == "__main__":
    main()
