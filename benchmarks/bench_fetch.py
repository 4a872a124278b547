"""Registry batch intake: release diffs fetched, verified, unpacked and diffed per second.

    python benchmarks/bench_fetch.py [--count 100] [--fetch-ahead 8] [--list FILE]

Runs ``producers.files.read_inputs`` (what ``canary submit @tonight.txt`` and ``canary scan``
run before anything is gated) over the first ``--count`` specs of the pinned list, and prints
wall time, releases/s, MB of diff produced, and the CPU seconds of this process (downloads, in
threads) and of its diff processes (unpacking and diffing). Needs the package registries: the number is bounded by the network as much as by
this machine, so quote it with the CPU split. Nothing is gated or stored.
"""

from __future__ import annotations

import resource
import time
from pathlib import Path

from harness import arguments  # also puts the repository on sys.path

from producers.files import read_inputs

DEFAULT_LIST = Path(__file__).parent / "releases" / "popular-releases.txt"


def main() -> None:
    parser = arguments(__doc__)
    parser.add_argument("--count", type=int, default=100)
    parser.add_argument("--fetch-ahead", type=int, default=8)
    parser.add_argument("--list", default=str(DEFAULT_LIST))
    args = parser.parse_args()
    lines = Path(args.list).read_text().splitlines()
    specs = [s for line in lines if (s := line.strip()) and not s.startswith("#")][: args.count]
    errors: list[str] = []
    started, cpu = time.perf_counter(), time.process_time()
    total = sum(len(data) for _, data in read_inputs(specs, errors, fetch_ahead=args.fetch_ahead))
    wall = time.perf_counter() - started
    own = time.process_time() - cpu
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(
        f"releases {len(specs) - len(errors)} of {len(specs)} ({len(errors)} failed), fetch-ahead {args.fetch_ahead}"
    )
    print(
        f"wall {wall:.1f} s  ->  {(len(specs) - len(errors)) / wall:.1f} releases/s, {total / 1e6:.1f} MB of diff"
    )
    print(f"CPU: this process {own:.1f} s, diff processes {children.ru_utime + children.ru_stime:.1f} s")


if __name__ == "__main__":
    main()
