"""Injections written as code comments: the prompt-injection gate with and without its prose view.

    python benchmarks/in_code.py [--seed 0] [--context 512] [--negatives] [FILE.jsonl[.gz]]

Writes every record of ``FILE`` (default: the prompt-injection dev split) as added ``#`` or ``//``
comment lines of a ``.py`` / ``.js`` file in a unified diff, between two pieces of the harmless
malicious-package TRAIN diffs (each under ``--context`` bytes, drawn with ``--seed``), label unchanged. Then
runs ``canary eval --json`` with the shipped policy (raw windows + the prose view of
``worker/core/prose.py``) and with a copy of it whose detectors read raw windows only, and prints
n, FN, FP, FNR and FPR of each. ``--negatives`` also gates the malicious-package TRAIN split's
harmless release diffs under both (every one presumed harmless: FP is the cost of the view on
real code). Nothing is trained or tuned here.
"""

from __future__ import annotations

import random
import tempfile
from pathlib import Path

import yaml
from harness import arguments, datasets_dir, evaluate, read_records, split_path, write_records

from policies.loader import load_policy
from worker.training.data import load_corpus, planted

POLICY = "prompt-injection"
SYNTAXES = (("+# ", "pkg/util.py"), ("+// ", "src/util.js"))


def as_comments(text: str, rng: random.Random, code: list[bytes], context: int = 512) -> str:
    """``text`` as added comment lines of one code file, between two short harmless diff pieces."""
    prefix, path = rng.choice(SYNTAXES)
    body = "\n".join(prefix + line for line in text.split("\n"))
    header = f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n@@ -1,3 +1,40 @@\n"
    before, _, after = planted(rng, "", code, context).partition("\n\n")
    return f"{before}\n{header}{body}\n{after}"


def raw_only_policy(folder: Path) -> Path:
    """The shipped policy with every detector's ``prose`` option removed, as a YAML file."""
    data = load_policy(POLICY).model_dump(mode="json", exclude={"sha256"})
    data["version"] = data["version"] + "+raw-windows-only"
    for detector in data["quorum"]["detectors"]:
        detector["options"].pop("prose", None)
    path = folder / f"{POLICY}-raw-windows-only.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def main() -> None:
    parser = arguments(__doc__)
    parser.add_argument("file", nargs="?")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--context", type=int, default=512, help="bytes of harmless diff at most on each side"
    )
    parser.add_argument("--negatives", action="store_true", help="also gate train's harmless release diffs")
    args = parser.parse_args()
    source = Path(args.file) if args.file else split_path(POLICY, "dev")
    code_corpus = load_corpus(datasets_dir(), "malicious-package", "train")
    code = [
        t.encode("utf-8") for t, label in zip(code_corpus.texts, code_corpus.labels, strict=True) if not label
    ]
    rng = random.Random(args.seed)
    records = list(read_records(source))
    for record in records:
        record["text"] = as_comments(record["text"], rng, code, args.context)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        inputs = {"dev records as code comments": write_records(folder / "in-code.jsonl.gz", records)}
        if args.negatives:
            negatives = [
                {"id": i, "text": t, "label": "harmless", "source": "release-diff"}
                for t, label, i in zip(code_corpus.texts, code_corpus.labels, code_corpus.ids, strict=True)
                if not label
            ]
            inputs["train harmless release diffs"] = write_records(folder / "negatives.jsonl.gz", negatives)
        policies = {
            "raw windows + prose view (shipped)": POLICY,
            "raw windows only": str(raw_only_policy(folder)),
        }
        print(f"{'input':32} {'gate':36} {'n':>5} {'FN':>4} {'FP':>4} {'FNR':>7} {'FPR':>7}")
        for what, path in inputs.items():
            for name, policy in policies.items():
                (row,) = evaluate(path, policy, ("rules,lexical,semantic",))
                print(
                    f"{what:32} {name:36} {row['n']:5d} {row['fn']:4d} {row['fp']:4d}"
                    f" {100 * float(row['fnr']):6.1f}% {100 * float(row['fpr']):6.1f}%"
                )


if __name__ == "__main__":
    main()
