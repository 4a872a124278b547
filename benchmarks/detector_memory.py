"""Memory and time of one local vote on a large artifact: the pre-check and each local detector.

Usage: ``python benchmarks/detector_memory.py [--size 1 --size 20 --size 100] [--policy ID]``

Every (detector, size) runs in a fresh interpreter, so its peak resident set is its own: the
artifact is built first (harmless malicious-package train diffs repeated to ``size`` MB, in
memory only) and the peak is read before and after the vote. What the vote adds is the
difference; flat means it does not grow with the artifact. Windows are scored a bounded batch at
a time (``worker.detectors.local.windows.BATCH_BYTES``); before that a 20 MB diff took the lexical
detector 2.8 GB.
"""

from __future__ import annotations

import json
import subprocess
import sys

from harness import ROOT, arguments

KINDS = ("precheck", "rules", "lexical", "semantic")

CHILD = r"""
import gzip, hashlib, json, resource, sys, time
sys.path.insert(0, {root!r})
from policies.loader import load_policy
from worker.core.detector import Artifact
from worker.detectors import build_detector
from worker.training.data import default_datasets_dir

kind, size, policy_id = {kind!r}, int({megabytes!r} * 1e6), {policy!r}
path = default_datasets_dir() / "malicious-package" / "train.jsonl.gz"
with gzip.open(path, "rt", encoding="utf-8") as lines:
    blob = "".join(r["text"] for r in map(json.loads, lines) if r["label"] == "harmless").encode()
data = (blob * (size // len(blob) + 1))[:size]
del blob
policy = load_policy(policy_id)
artifact = Artifact(sha256=hashlib.sha256(data).hexdigest(), data=data)
warm = Artifact(sha256=hashlib.sha256(b"warm").hexdigest(), data=b"warm up")
if kind == "precheck":
    from worker.core.precheck import run_precheck
    run_precheck(warm.data, policy)
    vote = lambda: run_precheck(data, policy).verdict
else:
    detector = build_detector(next(d for d in policy.quorum.detectors if d.kind == kind))
    detector.answer(warm, policy)  # load the model before measuring
    vote = lambda: detector.answer(artifact, policy).output
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
started = time.perf_counter()
verdict = vote()
seconds = time.perf_counter() - started
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({{"before_mb": before / 1024, "after_mb": after / 1024, "seconds": seconds, "verdict": verdict}}))
"""


def measure(kind: str, megabytes: float, policy: str) -> dict[str, float | str]:
    code = CHILD.format(root=str(ROOT), kind=kind, megabytes=megabytes, policy=policy)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    result: dict[str, float | str] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = arguments(__doc__)
    parser.add_argument("--size", type=float, action="append", help="artifact size in MB (repeatable)")
    parser.add_argument("--policy", default="malicious-package")
    parser.add_argument("--kind", action="append", choices=KINDS, help="default: all")
    args = parser.parse_args()
    sizes = args.size or [1.0, 20.0, 100.0]
    print(f"policy {args.policy}; peak resident MB before -> after one vote, added by the vote, seconds")
    for kind in args.kind or KINDS:
        for megabytes in sizes:
            r = measure(kind, megabytes, args.policy)
            added = float(r["after_mb"]) - float(r["before_mb"])
            print(
                f"  {kind:9s} {megabytes:6.1f} MB: {float(r['before_mb']):7.0f} -> {float(r['after_mb']):7.0f}"
                f"  (+{added:5.0f})  {float(r['seconds']):6.1f} s  {r['verdict']}"
            )


if __name__ == "__main__":
    main()
