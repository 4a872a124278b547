"""Peak memory of `canary scan` per input byte, on a text file and on a diff of 10 and 100 MB.

    python benchmarks/scan_memory.py [--sizes 10 100] [--kind text --kind diff] [--policy ID]

Each scan is its own `canary scan --json -p POLICY FILE` process with a fresh data folder (the
gate dedupes by content: a re-run must gate again) and the compiled rule cache warm. Its peak
RSS (``ru_maxrss`` of the child, from ``os.wait4``) minus the peak of scanning a tiny file under
the same policy (imports, compiled rules, loaded models: what any scan costs) is what the input
costs; divided by the input's size, bytes per input byte. TARGET (issue #24): <= 1.5.

The inputs, built in a temporary folder: ``text`` is the synthetic mixed text of
``bench_precheck.py`` (prose, logs, code, a diff fragment, lockfile hashes, base64, emoji and
Hebrew) without its planted injection; ``diff`` is the harmless release diffs of the
malicious-package train split (real diffs, read as data) tiled to the size. Both are gated under
``--policy`` (default prompt-injection, the default of `canary scan`), where the pre-check lets
them through and every detector reads them, the worst case. (Under malicious-package the tiled diff
is quarantined by the pre-check alone: many harmless releases in one artifact add up.) Each report
must cover every byte (``coverage.scanned_bytes == total_bytes``): the line says so.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import harness
from bench_precheck import MB, mixed_text

TARGET_BYTES_PER_BYTE = 1.5
KINDS = ("text", "diff")
TINY = b"Release notes: fixed a crash in the CSV parser when a row ends with a comma.\n"


def text_input(size: int) -> bytes:
    """``size`` bytes of mixed text with no injection (its planted one cut off, blank lines instead)."""
    data = mixed_text(size)
    cut = data.rfind(b"\nNote to the AI")
    return data[:cut] + b"\n" * (len(data) - cut)


def diff_input(size: int) -> bytes:
    """``size`` bytes of real harmless release diffs (malicious-package train), tiled."""
    unit = "\n".join(harness.harmless_texts("malicious-package", "train")).encode()
    whole, rest = divmod(size, len(unit))
    return b"".join([unit] * whole + [unit[:rest]])


BUILD = {"text": text_input, "diff": diff_input}


def scan(path: Path, policy: str, tmp: Path) -> dict[str, object]:
    """One `canary scan` process: its peak RSS (MB), CPU and wall seconds, and its report."""
    data_dir = tempfile.mkdtemp(dir=tmp, prefix="data-")  # removed after the scan: it stores the input
    env = {**os.environ, "CANARY_DATA_DIR": data_dir, "CANARY_CACHE_DIR": str(tmp / "cache")}
    for var in ("CANARY_BROKER_URL", "CANARY_DATABASE_URL", "CANARY_S3_ENDPOINT_URL"):
        env.pop(var, None)
    argv = [sys.executable, "-m", "worker", "scan", "--json", "-p", policy, str(path)]
    started = time.monotonic()
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen(argv, cwd=harness.ROOT, env=env, stdout=out, stderr=subprocess.DEVNULL)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        lines = [line for line in out.read().decode().splitlines() if line.startswith("{")]
    shutil.rmtree(data_dir, ignore_errors=True)
    if proc.returncode not in (0, 1) or not lines:
        raise RuntimeError(f"canary scan {path.name} exited {proc.returncode}")
    return {
        "peak_mb": usage.ru_maxrss / 1024,
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "wall_s": time.monotonic() - started,
        "report": json.loads(lines[0]),
    }


def main() -> None:
    parser = harness.arguments(__doc__)
    parser.add_argument("--sizes", nargs="+", type=int, default=[10, 100], help="input sizes in MB")
    parser.add_argument("--kind", action="append", choices=KINDS, help="default: both")
    parser.add_argument("--policy", default="prompt-injection")
    parser.add_argument("--make", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.make:
        kind, size, path = args.make
        Path(path).write_bytes(BUILD[kind](int(size) * MB))
        return
    kinds, policy = args.kind or list(KINDS), args.policy
    print(harness.machine_line())
    tmp = Path(tempfile.mkdtemp(prefix="canary-scan-memory-"))
    try:
        measure(args.sizes, kinds, policy, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def measure(sizes: list[int], kinds: list[str], policy: str, tmp: Path) -> None:
    """Scan the tiny file, then each input; print the table and the TARGET lines."""
    tiny = tmp / "tiny.txt"
    tiny.write_bytes(TINY)
    scan(tiny, policy, tmp)  # fills the compiled cache
    base = float(scan(tiny, policy, tmp)["peak_mb"])  # type: ignore[arg-type]
    print(f"policy {policy}; scanning a {len(TINY)}-byte file peaks at {base:.1f} MB (the baseline)")
    print(f"{'input':>12} {'peak MB':>8} {'+MB':>7} {'B/B':>5} {'CPU s':>7} {'wall s':>7}  verdict")
    rows = []
    for kind in kinds:
        for size in sizes:
            path = tmp / f"{kind}-{size}mb.{'diff' if kind == 'diff' else 'txt'}"
            # In a child: a forked `canary scan` starts with this process's peak as its own
            # (ru_maxrss survives exec), so this one must never hold a large input.
            subprocess.run([sys.executable, __file__, "--make", kind, str(size), str(path)], check=True)
            got = scan(path, policy, tmp)
            path.unlink()
            report: dict = got["report"]  # type: ignore[assignment]
            cover = report["coverage"]
            whole = "every byte" if cover["scanned_bytes"] == cover["total_bytes"] == size * MB else "NOT ALL"
            extra = float(got["peak_mb"]) - base  # type: ignore[arg-type]
            per_byte = extra / size
            rows.append((kind, size, per_byte))
            votes = len(report["votes"])
            print(
                f"{kind + f' {size} MB':>12} {got['peak_mb']:8.1f} {extra:7.1f} {per_byte:5.2f} "
                f"{got['cpu_s']:7.1f} {got['wall_s']:7.1f}  {report['decision']} ({votes} votes), {whole} scanned",
                flush=True,  # a 100 MB diff takes minutes: show each row as it comes
            )
    for kind, size, per_byte in rows:
        harness.target(
            f"canary scan peak memory per input byte, {kind} {size} MB ({policy})",
            per_byte,
            "bytes/byte",
            at_most=TARGET_BYTES_PER_BYTE,
        )


if __name__ == "__main__":
    main()
