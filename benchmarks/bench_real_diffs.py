"""The pre-check beside little-canary's structural filter, on real release diffs, in one run.

    python benchmarks/bench_real_diffs.py [--repeat 3] [--limit N] [--profile]

The diffs are the harmless records of the malicious-package train split: real releases diffed
against their predecessors (read as data, never run). Each diff is one call, as a gate makes it:
``run_precheck(bytes, policy)`` under prompt-injection (the like-for-like policy: little-canary's
filter looks for prompt injections) and under malicious-package (what a registry scan gates diffs
with), and ``StructuralFilter().check(str)`` of little-canary (``pip install little-canary``; its
length limit lifted so it reads the whole diff; the text is decoded outside its clock, which
favours it). CPU time (``time.process_time``) is summed over the diffs, best of ``--repeat``
rounds, the engines interleaved in every round so that both see the same machine. TARGET
(issue #24): the pre-check >= 10x little-canary's filter in bytes per CPU-second.
``--profile`` prints the pre-check's top functions (cProfile) on the same diffs.
"""

from __future__ import annotations

import cProfile
import pstats
import sys
import time
from collections.abc import Callable

import harness

TARGET_RATIO = 10.0
POLICIES = ("prompt-injection", "malicious-package")


def best_cpu(run: Callable[[], object], repeat: int) -> float:
    """The least CPU seconds of ``repeat`` calls of ``run``."""
    best = float("inf")
    for _ in range(repeat):
        started = time.process_time()
        run()
        best = min(best, time.process_time() - started)
    return best


def main() -> None:
    parser = harness.arguments(__doc__)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--limit", type=int, default=0, help="the first N diffs only")
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    try:
        from little_canary.structural_filter import StructuralFilter
    except ImportError:
        sys.exit("bench_real_diffs: little-canary is not installed (pip install little-canary)")
    from policies.loader import load_policy
    from worker.core.precheck import run_precheck

    texts = harness.harmless_texts("malicious-package", "train")[: args.limit or None]
    diffs = [t.encode() for t in texts]
    size = sum(map(len, diffs))
    policies = {p: load_policy(p) for p in POLICIES}
    for policy in policies.values():
        run_precheck(diffs[0], policy)  # compile or load the rules outside the clock
    lc = StructuralFilter(max_input_length=sys.maxsize)
    print(harness.machine_line())
    print(f"{len(diffs)} real release diffs, {size / 1e6:.1f} MB; best of {args.repeat} rounds")

    engines: dict[str, Callable[[], object]] = {
        "little-canary StructuralFilter": lambda: [lc.check(t) for t in texts],
        **{
            f"pre-check, {name}": (lambda p=policy: [run_precheck(d, p) for d in diffs])
            for name, policy in policies.items()
        },
    }
    cpu = dict.fromkeys(engines, float("inf"))
    for _ in range(args.repeat):
        for name, run in engines.items():
            cpu[name] = min(cpu[name], best_cpu(run, 1))
    for name, seconds in cpu.items():
        print(f"  {name:34} {seconds:7.2f} CPU-s  {size / 1e6 / seconds:7.2f} MB per CPU-second")
    baseline = size / cpu["little-canary StructuralFilter"]
    for name in POLICIES:
        ratio = size / cpu[f"pre-check, {name}"] / baseline
        harness.target(
            f"pre-check ({name}) / little-canary filter, real diffs", ratio, "x", at_least=TARGET_RATIO
        )
    if args.profile:
        policy = policies["malicious-package"]
        profiler = cProfile.Profile()
        profiler.runcall(lambda: [run_precheck(d, policy) for d in diffs])
        pstats.Stats(profiler).sort_stats("tottime").print_stats(20)


if __name__ == "__main__":
    main()
