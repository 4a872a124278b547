"""False positives on real releases: popular PyPI and npm packages, diffed and gated as a night job would.

    python benchmarks/real_releases.py [--list benchmarks/releases/popular-releases.txt]
        [--policy malicious-package] [--policy prompt-injection] [--cache ~/.cache/canary-releases] [--json]

The labelled dataset's benign diffs are few and its dev split cannot say how
the gate behaves on what a registry scan really sees. This gates the pinned
releases in ``popular-releases.txt`` (each diffed against its predecessor by
``producers.registry``, the same code ``canary scan pypi:NAME==VER`` runs) with
the embedded default, and prints per policy and ecosystem: n, allowed,
quarantined, review, the false-positive rate (every release in the list is
presumed benign), p50/p95 ms per gate, how often each detector voted harmful
(whatever the decision), and which releases were blocked and by whom. Needs the
package registries; diffs are cached in ``--cache``.
"""

from __future__ import annotations

import json
import logging
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from harness import arguments  # also puts the repository on sys.path

from producers.files import expand_paths
from worker.core.models import Report

DEFAULT_LIST = Path(__file__).parent / "releases" / "popular-releases.txt"


def cached_diffs(specs: list[str], cache: Path) -> list[tuple[str, bytes]]:
    """``(label, diff)`` per spec, fetched once (8 at a time) and then read from ``cache``."""
    import httpx

    from producers.registry import RegistryError, release_diff

    cache.mkdir(parents=True, exist_ok=True)
    diff_at = {s: cache / (s.replace("/", "%2F") + ".diff") for s in specs}
    label_at = {s: cache / (s.replace("/", "%2F") + ".label") for s in specs}
    missing = [s for s in specs if not label_at[s].exists()]

    def fetch(client: httpx.Client, spec: str) -> None:
        try:
            got = release_diff(client, spec)
        except RegistryError as exc:
            print(f"not fetched: {exc}", file=sys.stderr)
            return
        diff_at[spec].write_bytes(got.data)
        label_at[spec].write_text(got.label)

    with httpx.Client(timeout=60.0, follow_redirects=True) as client, ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda spec: fetch(client, spec), missing))
    return [(label_at[s].read_text(), diff_at[s].read_bytes()) for s in specs if label_at[s].exists()]


def main() -> None:
    parser = arguments(__doc__)
    parser.add_argument("--list", default=str(DEFAULT_LIST))
    parser.add_argument("--policy", action="append")
    parser.add_argument("--cache", default=str(Path.home() / ".cache" / "canary-releases"))
    parser.add_argument("--json", action="store_true", help="one JSON line per gate, then the summary")
    args = parser.parse_args()
    policies = args.policy or ["malicious-package", "prompt-injection"]
    from worker.logs import configure_logging
    from worker.settings import Settings
    from worker.tasks.embedded import EmbeddedGate

    configure_logging(logging.WARNING)
    # A fresh data folder: the gate dedupes by content, and a re-run must gate again, not look up.
    gate = EmbeddedGate(Settings(data_dir=Path(tempfile.mkdtemp(prefix="canary-releases-"))))

    def scan(data: bytes, policy: str) -> Report:
        submitted = gate.submit(data, [policy], source="real-releases")
        return Report.model_validate_json(submitted.gates[0].report)

    specs = expand_paths([f"@{args.list}"])
    diffs = cached_diffs(specs, Path(args.cache))
    stats: dict[tuple[str, str], dict[str, list]] = defaultdict(lambda: defaultdict(list))
    for label, data in diffs:
        eco = label.split(":", 1)[0]
        for policy in policies:
            started = time.perf_counter()
            report = scan(data, policy)
            ms = (time.perf_counter() - started) * 1000
            row = stats[(policy, eco)]
            row[report.decision].append(label)
            row["ms"].append(ms)
            harmful = [v.detector for v in report.votes if v.verdict == "harmful"]
            if report.precheck.verdict == "harmful":
                harmful.insert(0, "pre-check")
            row["harmful"].extend(harmful)
            if report.decision != "allow":
                row["why"].append(f"{label} ({', '.join(harmful) or report.reason})")
            if args.json:
                out = {"label": label, "size": len(data), "policy": policy, "decision": report.decision}
                print(json.dumps({**out, "harmful": harmful, "ms": round(ms, 1)}))

    print(f"\n{len(diffs)} real releases, {sum(len(d) for _, d in diffs) / 1e6:.1f} MB of diffs")
    print(
        f"{'policy':20} {'eco':5} {'n':>4} {'allow':>6} {'quar.':>6} {'review':>6} {'FPR':>7} {'p50 ms':>7} {'p95 ms':>7}"
    )
    for (policy, eco), row in sorted(stats.items()):
        n = len(row["ms"])
        blocked = len(row["quarantine"]) + len(row["review"])
        ms = sorted(row["ms"])
        p95 = ms[min(len(ms) - 1, int(0.95 * len(ms)))]
        print(
            f"{policy:20} {eco:5} {n:4d} {len(row['allow']):6d} {len(row['quarantine']):6d} "
            f"{len(row['review']):6d} {blocked / n:7.1%} {statistics.median(ms):7.0f} {p95:7.0f}"
        )
    print("\nharmful votes, whatever the decision (each detector alone, and the pre-check):")
    for (policy, eco), row in sorted(stats.items()):
        counts = {name: row["harmful"].count(name) for name in dict.fromkeys(sorted(row["harmful"]))}
        print(f"  {policy:20} {eco:5} " + (", ".join(f"{k} {v}" for k, v in counts.items()) or "none"))
    for (policy, eco), row in sorted(stats.items()):
        if row["why"]:
            print(f"\nblocked under {policy} ({eco}): " + "; ".join(row["why"]))


if __name__ == "__main__":
    main()
