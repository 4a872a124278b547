"""CPU time of each local detector of a policy on ~24 KB harmless diffs, in one process.

    python benchmarks/detector_cpu.py [--policy prompt-injection] [--diffs 40] [--rounds 3]

Each detector of the policy's quorum, built as a worker builds it, answers the same ``--diffs``
harmless malicious-package train diffs cut to 24 KB (loaded and warmed first), ``--rounds``
times in turn; the semantic detector of a policy whose semantic detector has a reader is also
timed without it, side by side. CPU time (``time.process_time``) drifts less with the host's
load than wall time; the best round counts. The implied rate of the quorum on 2 cores (two
processes, no pre-check, no coordination) is printed beside the 20 artifacts/s target. BLAS
threads: set ``OPENBLAS_NUM_THREADS=1`` to read one core's cost.
"""

from __future__ import annotations

import hashlib
import time

from harness import arguments, harmless_texts, machine_line, target

from policies.loader import load_policy
from worker.core.detector import Artifact
from worker.detectors import detector_for
from worker.detectors.local.semantic import SemanticDetector

SIZE = 24 << 10


def main() -> None:
    parser = arguments(__doc__)
    parser.add_argument("--policy", default="prompt-injection")
    parser.add_argument("--diffs", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    policy = load_policy(args.policy)
    texts = [t.encode("utf-8")[:SIZE] for t in harmless_texts("malicious-package") if len(t) >= SIZE]
    artifacts = [Artifact(sha256=hashlib.sha256(t).hexdigest(), data=t) for t in texts[: args.diffs]]
    detectors = {spec.name: detector_for(policy, spec) for spec in policy.quorum.detectors}
    specs = {spec.name: spec for spec in policy.quorum.detectors}
    for name, spec in specs.items():
        if spec.kind == "semantic" and spec.options.get("reader") is True:
            plain = {
                key: value for key, value in spec.options.items() if key not in ("reader", "second_ranker")
            }
            detectors[f"{name} (no reader)"] = SemanticDetector(name=name, **plain)
    for detector in detectors.values():
        detector.answer(artifacts[0], policy)  # load and warm
    print(f"{machine_line()}; {len(artifacts)} diffs of {SIZE} bytes, {args.rounds} rounds")
    best: dict[str, float] = {}
    for _ in range(args.rounds):
        for name, detector in detectors.items():
            started = time.process_time()
            for artifact in artifacts:
                detector.answer(artifact, policy)
            ms = (time.process_time() - started) / len(artifacts) * 1000
            best[name] = min(best.get(name, ms), ms)
    for name, ms in best.items():
        print(f"{name:24} {ms:8.1f} CPU-ms per diff")
    quorum = sum(best[spec.name] for spec in policy.quorum.detectors)
    target(f"{args.policy} quorum on 2 cores, by CPU time", 2000 / quorum, "artifacts/s", at_least=20)
    without = [f"{name} (no reader)" for name in specs if f"{name} (no reader)" in best]
    if without:
        alone = (
            quorum
            - sum(best[n.removesuffix(" (no reader)")] for n in without)
            + sum(best[n] for n in without)
        )
        print(f"  without the reader: {2000 / alone:.1f} artifacts/s")


if __name__ == "__main__":
    main()
