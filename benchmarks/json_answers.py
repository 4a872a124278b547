"""Records inside JSON tool answers written the way tools write them: escaped, compact, cut short.

    python benchmarks/json_answers.py [--policy prompt-injection] [--size 2048 --size 16384]...
        [--setup rules,lexical,semantic]... [--carriers 200] [--escape always|never]
        [--disguise references|fullwidth|bold|lookalike|zero-width] [--languages N | FILE.jsonl[.gz]]

An agent's tools answer in JSON, and most are written in Python, whose ``json.dumps`` escapes every
character outside ASCII (``\\u0437``) unless told otherwise, writes compact documents on one line,
and search tools cut their snippets mid-sentence (mid-link, too). For every size this writes, in
one of three answer shapes (a search tool's results with titles and cut snippets, a mailbox's
e-mails, a product's reviews), escaped or not, compact or indented:
(1) each harmful record of ``FILE`` (default: the policy's dev split) whole in one string field;
(2) ``--carriers`` answers with nothing planted (harmless);
(3) each harmless record of ``FILE`` whole in one field (harmless);
the other fields hold paragraphs of the README carriers no model was trained on. ``--languages N``
reads, instead of ``FILE``, N records per language other than English: steering instructions drawn
with another seed than training's (:func:`worker.training.corpus.steering.attack`, harmful) and
the errands' ordinary sentences (no shipped model read them; harmless); with ``--escape always``
and ``--escape never`` that measures what escaping hides. ``--disguise`` writes every record's
letters, harmful and harmless, in a disguise a language model reads through (as
``benchmarks/planted.py`` does). It runs
``canary eval --json`` and prints, per size, the attacks caught and the harmless answers blocked,
carriers and records apart. Nothing is trained or tuned here.
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
from pathlib import Path
from typing import Any

from harness import SHIPPED_SETUPS, evaluate, read_records, split_path, write_records
from planted import CARRIERS_FILE, DISGUISES

SHAPES = ("search", "mailbox", "reviews")


def _paragraphs() -> list[str]:
    """The non-empty paragraphs of the README carriers, each at most 600 characters."""
    return [
        paragraph.strip()[:600]
        for record in read_records(CARRIERS_FILE)
        for paragraph in record["text"].split("\n\n")
        if paragraph.strip()
    ]


def generated(per_language: int, seed: int) -> list[dict[str, Any]]:
    """Steering instructions (harmful) and ordinary sentences (harmless), per language but English."""
    from worker.training.corpus import errands, steering

    rng = random.Random(1_000_003 + seed)  # training draws with seed 0
    rows: list[dict[str, Any]] = []
    for lang in sorted(set(steering.LANGUAGES) & set(errands.LANGUAGES) - {"en"}):
        for i in range(per_language):
            attack = steering.attack(rng, lang, rng.choice(steering.KINDS))
            ordinary = errands.filled(rng, errands.ordinary(rng, lang))
            rows.append({"id": f"steer-{lang}-{i}", "text": attack, "label": "harmful"})
            rows.append({"id": f"ordinary-{lang}-{i}", "text": ordinary, "label": "harmless"})
    return rows


def answer(
    rng: random.Random, paragraphs: list[str], size: int, payload: str | None, escape: str = "random"
) -> str:
    """A tool's JSON answer of about ``size`` bytes, ``payload`` whole in one field of one item."""
    texts: list[str] = []
    while sum(len(t) + 40 for t in texts) < size:
        texts.append(rng.choice(paragraphs))
    shape = rng.choice(SHAPES)
    items: list[dict[str, Any]]
    if shape == "search":
        items = [
            {
                "title": t.split("\n")[0][:60],
                "url": f"https://docs.example.org/p/{i}",
                "snippet": t[: rng.randrange(120, 400)],
            }
            for i, t in enumerate(texts)
        ]
        planted = {"title": "Result", "url": "https://docs.example.org/p/x", "snippet": payload}
    elif shape == "mailbox":
        items = [
            {"from": f"user{i}@example.org", "subject": t.split("\n")[0][:40], "body": t}
            for i, t in enumerate(texts)
        ]
        planted = {"from": "sender@example.net", "subject": "Re: your request", "body": payload}
    else:
        items = [
            {"reviewer": f"user{i}", "rating": rng.randrange(1, 6), "content": t} for i, t in enumerate(texts)
        ]
        planted = {"reviewer": "guest", "rating": 5, "content": payload}
    if payload is not None:
        items.insert(rng.randrange(len(items) + 1), planted)
    document = {
        "search": {"results": items},
        "mailbox": {"emails": items},
        "reviews": {"product": {"reviews": items}},
    }
    escaped = rng.random() < 0.5 if escape == "random" else escape == "always"
    return json.dumps(document[shape], indent=rng.choice((None, 2)), ensure_ascii=escaped)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("file", nargs="?", type=Path)
    parser.add_argument("--policy", default="prompt-injection")
    parser.add_argument("--size", type=int, action="append", help="bytes; repeatable (default 2048, 16384)")
    parser.add_argument("--carriers", type=int, default=200, help="answers with nothing planted, per size")
    parser.add_argument("--setup", action="append", help="detector setups (default: the shipped gate)")
    parser.add_argument(
        "--escape",
        choices=("random", "always", "never"),
        default="random",
        help="non-ASCII as \\uXXXX (json.dumps' default) in half the answers, all or none",
    )
    parser.add_argument("--languages", type=int, metavar="N", help="N generated records per language")
    parser.add_argument(
        "--disguise", choices=sorted(DISGUISES), help="write every record's letters in this disguise"
    )
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if args.languages:
        source, records = f"--languages {args.languages}", generated(args.languages, args.seed)
    else:
        labelled = args.file or split_path(args.policy, "dev")
        source, records = str(labelled), list(read_records(labelled))
    if args.disguise:
        records = [{**r, "text": DISGUISES[args.disguise](r["text"])} for r in records]
        source += f", written {args.disguise}"
    paragraphs = _paragraphs()
    print(
        f"# {len(records)} records of {source} in JSON tool answers ({', '.join(SHAPES)}), and answers alone"
    )
    print(
        f"{'setup':24} {'size':>6} {'attacks':>7} {'caught':>7} {'rate':>7}"
        f" {'alone':>6} {'FP':>4} {'FPR':>6} {'records':>7} {'FP':>4} {'FPR':>6}"
    )
    with tempfile.TemporaryDirectory(prefix="canary-json-answers-") as scratch:
        for size in args.size or [2048, 16384]:
            rng = random.Random(args.seed + size)
            rows = [
                {
                    **r,
                    "text": answer(rng, paragraphs, size, r["text"], args.escape),
                    "source": f"in-json-{r['label']}",
                }
                for r in records
            ]
            rows += [
                {
                    "id": f"alone-{i}",
                    "text": answer(rng, paragraphs, size, None, args.escape),
                    "label": "harmless",
                    "source": "alone",
                }
                for i in range(args.carriers)
            ]
            path = write_records(Path(scratch) / f"json-{size}.jsonl", rows)
            for row in evaluate(path, args.policy, tuple(args.setup or SHIPPED_SETUPS)):
                parts = row.get("by_source", {})
                attacks = parts.get("in-json-harmful", {})
                alone, harmless = parts.get("alone", {}), parts.get("in-json-harmless", {})
                n = int(attacks.get("n", 0))
                caught = n - int(attacks.get("fn", 0))
                print(
                    f"{row['setup']!s:24} {size:6d} {n:7d} {caught:7d} {caught / max(1, n):7.1%}"
                    + "".join(
                        f" {int(p.get('n', 0)):{width}d} {int(p.get('fp', 0)):4d}"
                        f" {int(p.get('fp', 0)) / max(1, int(p.get('n', 0))):6.1%}"
                        for p, width in ((alone, 6), (harmless, 7))
                    ),
                    flush=True,
                )


if __name__ == "__main__":
    main()
