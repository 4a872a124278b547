"""Registry releases through the ``canary.fetch`` queue: releases/s with 1 and 2 worker processes
beside the parallel-fetch floor, and diffing beside fetching (issue #24: diffing keeps up with
half the parallel-fetch rate), in one run.

    python benchmarks/bench_fetch_queue.py [--count 40] [--list FILE] [--cache DIR] [--profile]

1. The first ``--count`` releases of the pinned list (each with its predecessor) are downloaded
   once from the real registries, 8 at a time (``--cache`` keeps them for the next run; then
   this step is skipped): the **network fetch rate**.
2. A loopback registry (``tests.fixtures.registry``) serves those real files. The **parallel-fetch
   floor**: the same releases fetched and verified from it, 8 at a time, nothing diffed: no
   worker can go faster than this.
3. **Diffing**: every release opened and diffed in this process (1 core), then in one process
   per core; ``--profile`` prints where one core's time goes.
4. **The queue**: 1, then 2 ``canary worker --concurrency 1 -Q <fetch queue>`` processes (as two
   hosts would run), real Redis and Postgres (``harness.services``); the releases are recorded
   and sent as ``canary submit`` sends them, and the clock stops when no fetch is pending.
   Each worker fetches from the loopback registry with its default politeness (per host:
   ``CANARY_FETCH_PER_HOST`` in flight, ``CANARY_FETCH_RATE_PER_HOST`` requests/s), verifies,
   diffs, stores the diff and registers its gates (their pre-check queue is not served here).

Targets printed as ``TARGET`` lines: 2 workers >= 1.5x one; diffing >= half the network fetch
rate (#24), as CPU capacity (cores / CPU-s per release: what the machine diffs when it is this
run's alone) and as measured wall rate (what it diffed under the load of the moment), and >= half
the loopback floor. On a shared machine the wall figures follow the load average printed first.
"""

from __future__ import annotations

import cProfile
import json
import os
import pstats
import sys
import time
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from pathlib import Path

from harness import WorkerProcess, arguments, cpu_seconds, machine_line, services, target

from producers.registry import (
    Politeness,
    RegistryError,
    ReleaseArchives,
    ReleaseRef,
    diff_archives,
    fetch_archives,
    polite_client,
)
from tests.fixtures.registry import Registry, serving

DEFAULT_LIST = Path(__file__).parent / "releases" / "popular-releases.txt"
POLICY = "malicious-package"
UNTHROTTLED = Politeness(per_host=8, rate=0.0)


def read_specs(path: Path, count: int) -> list[str]:
    lines = path.read_text().splitlines()
    return [s for line in lines if (s := line.strip()) and not s.startswith("#")][:count]


def download_once(specs: list[str], cache: Path) -> tuple[list[ReleaseArchives], float | None]:
    """The releases and their predecessors from the real registries, 8 at a time (cached in
    ``cache``); the releases/s of that download, or None when everything came from the cache."""
    cache.mkdir(parents=True, exist_ok=True)
    meta = {s: cache / (s.replace("/", "%2F") + ".json") for s in specs}
    missing = [s for s in specs if not meta[s].exists()]
    rate = None
    if missing:

        def fetch(spec: str) -> None:
            try:
                got = fetch_archives(client, spec)
            except RegistryError as exc:
                print(f"not fetched: {exc}", file=sys.stderr)
                return
            stem = meta[spec].with_suffix("")
            stem.with_suffix(".new").write_bytes(got.new)
            if got.old is not None:
                stem.with_suffix(".old").write_bytes(got.old)
            fields = {"label": got.label, "new_name": got.new_name, "old_name": got.old_name}
            meta[spec].write_text(json.dumps(fields))

        started = time.perf_counter()
        with polite_client(UNTHROTTLED) as client, ThreadPoolExecutor(8) as pool:
            list(pool.map(fetch, missing))
        rate = len([s for s in missing if meta[s].exists()]) / (time.perf_counter() - started)
    out = []
    for spec in specs:
        if not meta[spec].exists():
            continue
        fields = json.loads(meta[spec].read_text())
        stem = meta[spec].with_suffix("")
        old = stem.with_suffix(".old")
        archives = ReleaseArchives(
            fields["label"],
            stem.with_suffix(".new").read_bytes(),
            fields["new_name"],
            old.read_bytes() if old.exists() else None,
            fields["old_name"],
        )
        out.append(archives)
    return out, rate


def versions(label: str) -> tuple[str, str, str, str | None]:
    """``pypi:name:1.0->1.1`` -> (pypi, name, 1.1, 1.0); ``...:1.1:new-package`` -> (..., None)."""
    eco, rest = label.split(":", 1)
    if rest.endswith(":new-package"):
        name, new = rest[: -len(":new-package")].rsplit(":", 1)
        return eco, name, new, None
    name, pair = rest.rsplit(":", 1)
    old, new = pair.split("->")
    return eco, name, new, old


def publish(reg: Registry, releases: list[ReleaseArchives], base: str) -> list[ReleaseRef]:
    """Put each release and its predecessor on the loopback registry; their references."""
    refs = []
    for archives in releases:
        eco, name, new, old = versions(archives.label)
        blobs = {new: archives.new, **({old: archives.old} if old and archives.old is not None else {})}
        if eco == "pypi":
            names = {new: archives.new_name, **({old: archives.old_name} if old else {})}
            reg.pypi(name, blobs, filenames=names)
        else:
            reg.npm(name, blobs, base, latest=new)
        refs.append(ReleaseRef(eco, name, new, old))
    return refs


def parallel_fetch(refs: list[ReleaseRef]) -> float:
    """Releases/s fetched and verified from the loopback registry, 8 at a time, not diffed."""
    started = time.perf_counter()
    with polite_client(UNTHROTTLED) as client, ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda ref: fetch_archives(client, ref), refs))
    return len(refs) / (time.perf_counter() - started)


def diff_rates(releases: list[ReleaseArchives], profile: bool) -> tuple[float, float, float, float]:
    """Diffing in this process: releases/s (wall), CPU-s per release and MB of diff; then
    releases/s (wall) in one process per core."""
    profiler = cProfile.Profile() if profile else None
    started, cpu = time.perf_counter(), time.process_time()
    if profiler:
        profiler.enable()
    size = sum(len(diff_archives(a).data) for a in releases)
    if profiler:
        profiler.disable()
    one = len(releases) / (time.perf_counter() - started)
    cpu_each = (time.process_time() - cpu) / len(releases)
    started = time.perf_counter()
    with ProcessPoolExecutor(os.cpu_count() or 1) as pool:
        list(pool.map(diff_archives, releases, chunksize=1))
    every = len(releases) / (time.perf_counter() - started)
    if profiler:
        pstats.Stats(profiler).sort_stats("tottime").print_stats(12)
    return one, cpu_each, every, size / 1e6


def through_queue(
    env: dict[str, str], refs: list[ReleaseRef], workers: int, tmp: Path
) -> tuple[float, int, float]:
    """Releases/s through the fetch queue with ``workers`` one-process workers; failures; worker CPU-s."""
    from worker.pipeline.fetch import record_fetches
    from worker.pipeline.runtime import build_runtime
    from worker.settings import Settings
    from worker.tasks.app import create_app

    run_env = {**env, "CANARY_DATA_DIR": str(tmp / f"data-{workers}")}
    queue = env["CANARY_FETCH_QUEUE"]
    argv = [sys.executable, "-m", "worker", "worker", "--concurrency=1", "--loglevel=WARNING", "-Q", queue]
    procs = [WorkerProcess(argv, run_env, tmp / f"worker-{workers}-{n}.log") for n in range(workers)]
    try:
        for proc in procs:
            proc.wait_ready()
        settings = Settings()
        rt = build_runtime(settings, role="bench")
        app = create_app(settings, eager=False)
        cpu = sum(cpu_seconds(p.pid) for p in procs)
        started = time.perf_counter()
        rows = record_fetches(rt, refs, [POLICY])
        with app.producer_or_acquire() as producer:
            for row in rows:
                app.send_task("canary.fetch", (row.id,), producer=producer, ignore_result=True)
        ids = [row.id for row in rows]
        while True:
            found = rt.fetch_repo.get_many(ids)
            if all(r.status != "pending" for r in found.values()):
                break
            time.sleep(0.05)
        wall = time.perf_counter() - started
        used = sum(cpu_seconds(p.pid) for p in procs) - cpu
        failed = [r.reason for r in found.values() if r.status == "intake_failed"]
        for reason in failed:
            print(f"  intake_failed: {reason}")
        return len(refs) / wall, len(failed), used
    finally:
        for proc in procs:
            proc.stop()


def main() -> None:
    parser = arguments(__doc__)
    parser.add_argument("--count", type=int, default=40)
    parser.add_argument("--list", default=str(DEFAULT_LIST))
    parser.add_argument("--cache", default=str(Path.home() / ".cache" / "canary-fetch-bench"))
    parser.add_argument("--profile", action="store_true", help="where one core's diffing time goes")
    args = parser.parse_args()
    print(machine_line())
    specs = read_specs(Path(args.list), args.count)
    releases, network = download_once(specs, Path(args.cache))
    mb = sum(len(a.new) + len(a.old or b"") for a in releases) / 1e6
    print(f"{len(releases)} of {len(specs)} releases, {mb:.1f} MB of archives")
    if network is not None:
        print(f"network fetch (real registries, 8 at a time): {network:.1f} releases/s")
    else:
        print("network fetch: from the cache (delete --cache to measure it)")
    one, cpu_each, every, diff_mb = diff_rates(releases, args.profile)
    cores = os.cpu_count() or 1
    capacity = cores / cpu_each  # what the cores diff when they are this run's alone
    print(
        f"diffing (open + diff): {cpu_each * 1000:.0f} CPU-ms per release -> {capacity:.1f} releases/s "
        f"on {cores} idle cores; measured {one:.1f} releases/s in 1 process, {every:.1f} in {cores} "
        f"(wall, load {os.getloadavg()[0]:.1f}; {diff_mb:.1f} MB of diff)"
    )

    s = services("fetchq")
    reg = Registry()
    with serving(reg) as base:
        refs = publish(reg, releases, base)
        s.env |= {"CANARY_PYPI_INDEX_URL": f"{base}/simple", "CANARY_NPM_REGISTRY": base}
        os.environ.update(s.env)
        floor = parallel_fetch(refs)
        print(f"parallel-fetch floor (loopback registry, 8 at a time, no diff): {floor:.1f} releases/s")
        rates = {}
        for workers in (1, 2):
            s.flush()
            rate, failed, cpu = through_queue(s.env, refs, workers, s.tmp)
            rates[workers] = rate
            print(
                f"fetch queue, {workers} worker process(es): {rate:.1f} releases/s "
                f"({failed} intake_failed, worker CPU {cpu:.1f} s, {cpu / len(refs) * 1000:.0f} ms per release)"
            )
    print(f"side by side: floor {floor:.1f} | 1 worker {rates[1]:.1f} | 2 workers {rates[2]:.1f} releases/s")
    target("2 workers vs 1", rates[2] / rates[1], "x", at_least=1.5)
    if network is not None:
        target("diffing (CPU capacity) / network fetch", capacity / network, "x", at_least=0.5)
        target("diffing (wall, all cores) / network fetch", every / network, "x", at_least=0.5)
    target("diffing (wall, all cores) / loopback floor", every / floor, "x", at_least=0.5)


if __name__ == "__main__":
    main()
