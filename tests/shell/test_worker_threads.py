"""A worker's pool processes run one BLAS thread each instead of one per core each.

Unlimited, each prefork child ran as many BLAS threads as the machine has cores, and two
children on two cores fought for them (the prompt-injection ensemble: 10.1 artifacts/s against
17.7-18.0 with one thread each, ``benchmarks/bench_ensemble.py``).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import weakref

from worker.tasks.preload import on_worker_start

PROBE = textwrap.dedent(
    """
    import os
    import numpy
    from threadpoolctl import threadpool_info
    from worker.tasks.preload import on_worker_start

    def blas():
        return sorted({i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"})

    print("before", blas())
    on_worker_start(None)
    print("parent", blas())
    pid = os.fork()
    if pid == 0:
        print("child", blas(), flush=True)
        os._exit(0)
    os.waitpid(pid, 0)
    """
)


def blas_threads() -> tuple[str, str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")}
    result = subprocess.run(
        [sys.executable, "-c", PROBE],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    before, parent, child = [
        line for line in result.stdout.splitlines() if line.startswith(("before", "parent", "child"))
    ]
    return before, parent, child


def test_the_pool_children_inherit_the_limit_set_before_the_fork() -> None:
    """In a real process: the worker's main process limits BLAS at worker_init, and a forked
    child (a pool process) has the same limit."""
    before, parent, child = blas_threads()
    if (os.cpu_count() or 1) > 1:
        assert before != "before [1]"  # else this test shows nothing
    assert parent == "parent [1]" and child == "child [1]"


def test_a_worker_app_connects_the_limit_whether_or_not_it_preloads() -> None:
    from celery.signals import worker_init

    from worker.settings import Settings
    from worker.tasks.app import create_app

    create_app(Settings(preload=False, broker_url="memory://"), eager=False)  # builds, connects nothing
    receivers = [r() if isinstance(r, weakref.ReferenceType) else r for _, r in worker_init.receivers]
    assert on_worker_start in receivers
