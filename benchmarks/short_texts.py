"""How often are short harmless messages held back? Single sentences of the harmless records.

    python benchmarks/short_texts.py [--policy prompt-injection] [--setup SETUP]... [FILE.jsonl[.gz]]

Tickets, chat lines and one-line e-mails are short; the labelled records are mostly paragraphs and
pages. This cuts every harmless record of ``FILE`` (default: the policy's dev split) into sentences,
keeps the first, middle and last of those of 15 to 200 characters, labels each
harmless (a sentence of a harmless text is harmless), runs ``canary eval --json`` on them with the
shipped setups (or each ``--setup``) and prints n, FP and FPR of each. Harmful records are left
out: one sentence of an injection need not be one. Nothing is trained or tuned here.
"""

from __future__ import annotations

import re
from pathlib import Path

from harness import SHIPPED_SETUPS, arguments, evaluate_records, read_records, split_path

SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def sentences(text: str) -> list[str]:
    """The first, middle and last of its sentences of 15-200 characters (fewer if it has fewer)."""
    found = [s.strip() for s in SENTENCE_END.split(text) if 15 <= len(s.strip()) <= 200]
    return [found[i] for i in sorted({0, len(found) // 2, len(found) - 1})] if found else []


def main() -> None:
    parser = arguments(__doc__)
    parser.add_argument("file", nargs="?")
    parser.add_argument("--policy", default="prompt-injection")
    parser.add_argument(
        "--setup",
        action="append",
        help="detector setups, as canary eval -d takes them (default: the shipped "
        "gate and each detector alone)",
    )
    args = parser.parse_args()
    setups = tuple(args.setup or SHIPPED_SETUPS)
    source = Path(args.file) if args.file else split_path(args.policy, "dev")
    harmless = [r for r in read_records(source) if r["label"] == "harmless"]
    pieces = [
        {**record, "id": f"{record['id']}~{index}", "text": sentence}
        for record in harmless
        for index, sentence in enumerate(sentences(record["text"]))
    ]
    records = len(harmless)
    results = evaluate_records(pieces, args.policy, setups)
    print(f"# sentences of the {records} harmless records of {source} under {args.policy}")
    print(f"{'setup':24s} {'n':>5s} {'FP':>4s} {'FPR':>7s}")
    for setup, summary in zip(setups, results, strict=True):
        print(f"{setup:24s} {summary['n']:5d} {summary['fp']:4d} {100 * summary['fpr']:6.1f}%")


if __name__ == "__main__":
    main()
