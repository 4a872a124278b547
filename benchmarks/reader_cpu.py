"""The reader's integer layers against the same layers in float32: agreement and CPU time.

    python benchmarks/reader_cpu.py [--diffs 40] [--attacks 300]

Windows: every fourth 512-byte window of ``--diffs`` harmless malicious-package train diffs cut
to 24 KB, and the first 512 bytes of ``--attacks`` prompt-injection train attacks (a fixed
sample). Both builds of :func:`worker.detectors.local.reader.encoder_graph` (the shipped integer
one, with the weights it takes on this CPU, and its float32 reference, one onnxruntime thread each) score every window, one window per
call as the reader reads a diff's few. Printed: how far the logits differ, how many windows
land on the other side of the cut (the target: at most 0.5 %, one window in 200), and CPU-ms per window for each build
side by side. Train data only: no threshold is read from here.
"""

from __future__ import annotations

import dataclasses
import io
import random
import time

import numpy as np
from harness import arguments, harmless_texts, machine_line, read_records, split_path, target

from policies.loader import load_policy
from worker.detectors.local.reader import (
    Reader,
    encoder_graph,
    load_reader,
    reader_files,
    signed_products_exact,
)

WINDOW = 512


def windows(diffs: int, attacks: int) -> list[str]:
    texts = [t.encode("utf-8")[: 24 << 10] for t in harmless_texts("malicious-package") if len(t) >= 24 << 10]
    found = [
        data[start : start + WINDOW].decode("utf-8", errors="replace")
        for data in texts[:diffs]
        for start in range(0, len(data), 4 * WINDOW)
    ]
    harmful = [
        r["text"].encode("utf-8")[:WINDOW].decode("utf-8", errors="replace")
        for r in read_records(split_path("prompt-injection", "train"))
        if r["label"] == "harmful"
    ]
    return found + random.Random(0).sample(harmful, min(attacks, len(harmful)))


def timed(reader: Reader, texts: list[str]) -> tuple[np.ndarray, float]:
    reader.logits(texts[:1])  # the session is made on first use
    started = time.process_time()
    logits = np.concatenate([reader.logits([text]) for text in texts])
    return logits, (time.process_time() - started) / len(texts) * 1000


def main() -> None:
    parser = arguments(__doc__)
    parser.add_argument("--diffs", type=int, default=40)
    parser.add_argument("--attacks", type=int, default=300)
    args = parser.parse_args()
    shipped = load_reader("prompt-injection", policy=load_policy("prompt-injection"))
    with np.load(io.BytesIO(reader_files("prompt-injection")[0].read_bytes())) as archive:
        reference = dataclasses.replace(shipped, encoder=encoder_graph(archive, integer=False), _sessions={})
    texts = windows(args.diffs, args.attacks)
    print(f"{machine_line()}; {len(texts)} windows ({args.attacks} of them train attacks)")
    exact = signed_products_exact()
    print(
        f"integer weights: {'int8 (this CPU sums u8 x s8 exactly)' if exact else 'uint8 (u8 x s8 would saturate here)'}"
    )
    wide, wide_ms = timed(reference, texts)
    narrow, narrow_ms = timed(shipped, texts)
    gap = np.abs(wide - narrow)
    print(
        f"|logit difference|: mean {gap.mean():.3f}, 99th percentile {np.quantile(gap, 0.99):.3f}, max {gap.max():.3f}"
    )
    print(
        f"windows at or above the cut: float32 {int((wide >= shipped.threshold).sum())}, integer {int((narrow >= shipped.threshold).sum())}"
    )
    crossed = float(((wide >= shipped.threshold) != (narrow >= shipped.threshold)).mean() * 100)
    target("windows on the other side of the cut", crossed, "%", at_most=0.5)
    print(f"float32 layers {wide_ms:7.1f} CPU-ms per window")
    print(f"integer layers {narrow_ms:7.1f} CPU-ms per window ({wide_ms / narrow_ms:.1f}x)")


if __name__ == "__main__":
    main()
