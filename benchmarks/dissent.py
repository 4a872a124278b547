"""What the quorum's ``dissent`` option costs and catches: review load against missed attacks.

    python benchmarks/dissent.py votes --split train dev [--policy ID] [--releases LIST]
                                       [--records FILE.jsonl]... --out FILE
    python benchmarks/dissent.py table FILE [--dissent rules=0.8 lexical=0.99 ...]
                                            [--short-bytes 16384 --short-dissent semantic=0.999]
                                            [--seconded semantic=0.999 --seconds lexical=0.95
                                             --seconded-up-to 1048576] [--over-shipped]

``votes`` runs each policy's pre-check and its local detectors on every labelled record
(and, with ``--releases``, on the cached real-release diffs of ``benchmarks/real_releases.py``,
all presumed harmless; with ``--records``, on a labelled JSONL file such as train attacks planted
by ``benchmarks/planted.py``'s ``write_planted``, its name as the split) exactly as the gate does,
and writes one JSON line per item: label, split, pre-check verdict, each detector's verdict, score
and places (the windows its vote names, as offsets, with their scores), and the policy's
``colocate_bytes``. Nothing of the text is written. ``table`` replays the quorum (:func:`worker.core.quorum.decide_quorum`, the gate's
own rule) over those votes: for each detector, the split votes it loses, and for candidate
dissent thresholds how many harmless items would go to review (the cost) and how many
allowed attacks would (the gain); with ``--short-bytes``, ``--short-dissent`` replaces those scores
for items of at most that many bytes (the policy's ``quorum.dissent_short``); ``--seconded`` adds
the policy's ``quorum.dissent_seconded`` (a lone harmful vote another detector's place seconds). The
counts start from no dissent at all; with ``--over-shipped``, from each policy's shipped dissent
options, so that a candidate (the shipped options plus one more) shows what it adds to them. Choose
thresholds on train and the real releases (a benign corpus no model trained on); report dev.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from policies.loader import load_policy  # noqa: E402
from worker.core.detector import Artifact, cast_vote  # noqa: E402
from worker.core.models import ScoredWindow, Vote  # noqa: E402
from worker.core.policy import SecondedDissent, ShortDissent  # noqa: E402
from worker.core.precheck import run_precheck  # noqa: E402
from worker.core.quorum import _place, decide_quorum  # noqa: E402
from worker.detectors import detector_for  # noqa: E402

DATASETS = Path("/work/shared/datasets")
POLICIES = ("malicious-package", "prompt-injection")
CACHE = Path.home() / ".cache" / "canary-releases"


def labelled(policy: str, split: str) -> Iterator[tuple[str, str, bytes]]:
    with gzip.open(DATASETS / policy / f"{split}.jsonl.gz", "rt", encoding="utf-8") as lines:
        for line in lines:
            record = json.loads(line)
            yield split, record["label"], record["text"].encode("utf-8")


def records(path: Path, policy: str) -> Iterator[tuple[str, str, bytes]]:
    """A labelled JSONL file's records of ``policy`` (such as attacks planted in carriers by
    ``benchmarks/planted.py``'s ``write_planted``), the file's name as their split."""
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as lines:
        for line in lines:
            record = json.loads(line)
            if record.get("policy", policy) == policy:
                yield path.name.split(".")[0], record["label"], record["text"].encode("utf-8")


def releases(listing: Path) -> Iterator[tuple[str, str, bytes]]:
    for line in listing.read_text().splitlines():
        spec = line.split("#")[0].strip()
        path = CACHE / (spec.replace("/", "%2F") + ".diff")
        if spec and path.exists():
            yield listing.stem, "harmless", path.read_bytes()


def votes_command(args: argparse.Namespace) -> None:
    with open(args.out, "w", encoding="utf-8") as out:
        for policy_id in args.policy or POLICIES:
            policy = load_policy(policy_id)
            items = [item for split in args.split for item in labelled(policy_id, split)]
            for listing in args.releases or ():
                items.extend(releases(Path(listing)))
            for path in args.records or ():
                items.extend(records(Path(path), policy_id))
            for split, label, data in items:
                artifact = Artifact(sha256=hashlib.sha256(data).hexdigest(), data=data)
                row: dict[str, Any] = {
                    "policy": policy_id,
                    "split": split,
                    "label": label,
                    "bytes": len(data),
                }
                row["colocate"] = policy.quorum.colocate_bytes
                row["precheck"] = run_precheck(data, policy).verdict
                row["votes"] = []
                for spec in policy.quorum.detectors:
                    answer = detector_for(policy, spec).answer(artifact, policy)
                    vote = cast_vote(spec.name, spec.kind, answer, policy.protocol, 0.0)
                    places = [[*_flat(_place(w)), w.score] for w in vote.windows]
                    row["votes"].append(
                        {
                            "detector": spec.name,
                            "verdict": vote.verdict,
                            "score": vote.score,
                            "places": places,
                        }
                    )
                out.write(json.dumps(row) + "\n")


def _flat(place: tuple[str, tuple[int, int]]) -> list[Any]:
    """A window's place as written: view, start, end (raw offsets where it names them)."""
    return [place[0], *place[1]]


def replay(
    row: dict[str, Any],
    dissent: dict[str, float],
    required: int = 2,
    short: tuple[ShortDissent, ...] = (),
    seconded: SecondedDissent | None = None,
) -> str:
    from worker.core.models import Coverage, PrecheckResult

    precheck = PrecheckResult(verdict=row["precheck"])
    votes = [
        Vote(
            detector=v["detector"],
            backend="x",
            verdict=v["verdict"],
            score=v["score"],
            coverage=Coverage.full(int(row.get("bytes", 1))),
            windows=tuple(
                ScoredWindow(view=view, start=start, end=end, logit=0.0, score=(*score, 0.0)[0])
                for view, start, end, *score in v.get("places", ())  # files of before 2026-12-01: no score
            ),
        )
        for v in row["votes"]
    ]
    names = [v.detector for v in votes]
    return decide_quorum(precheck, votes, required, names, dissent, row.get("colocate"), short, seconded)[0]


def _pairs(pairs: list[str] | None) -> dict[str, float]:
    """``detector=score`` arguments as a mapping."""
    return {k: float(v) for k, v in (pair.split("=") for pair in pairs or ())}


def _options(
    args: argparse.Namespace,
) -> tuple[dict[str, float], tuple[ShortDissent, ...], SecondedDissent | None]:
    """The dissent, dissent_short and dissent_seconded that ``table``'s arguments describe."""
    scores = _pairs(args.short_dissent)
    short = (
        (ShortDissent(up_to_bytes=args.short_bytes, scores=scores),) if args.short_bytes and scores else ()
    )
    seconded = None
    if args.seconded:
        seconded = SecondedDissent(
            scores=_pairs(args.seconded), seconds=_pairs(args.seconds), up_to_bytes=args.seconded_up_to
        )
    return _pairs(args.dissent), short, seconded


Base = tuple[dict[str, float], tuple[ShortDissent, ...], SecondedDissent | None]


def _base(policy_id: str, shipped: bool) -> Base:
    """What ``table`` counts from: no dissent at all, or (``--over-shipped``) the policy's own."""
    if not shipped:
        return {}, (), None
    quorum = load_policy(policy_id).quorum
    return dict(quorum.dissent), tuple(quorum.dissent_short), quorum.dissent_seconded


def table_command(args: argparse.Namespace) -> None:
    rows = [json.loads(line) for line in Path(args.file).read_text().splitlines()]
    dissent, short, seconded = _options(args)
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault((row["policy"], row["split"]), []).append(row)
    print(f"dissent: {dissent or 'off'}  (blocked = quarantine or review, as canary eval counts it)")
    print("counted from:", "each policy's shipped dissent" if args.over_shipped else "no dissent")
    for tier in short:
        print(f"up to {tier.up_to_bytes} bytes: {tier.scores}")
    if seconded is not None:
        print(f"seconded: {seconded.scores} by {seconded.seconds} up to {seconded.up_to_bytes} bytes")
    head = (
        "policy",
        "split",
        "harmless",
        "blocked",
        "pre-check",
        "to review",
        "harmful",
        "allowed",
        "-> review",
    )
    print("{:18} {:22} {:>8} {:>8} {:>9} {:>9} {:>8} {:>8} {:>9}".format(*head))
    for (policy, split), group in sorted(groups.items()):
        harmless = [r for r in group if r["label"] == "harmless"]
        harmful = [r for r in group if r["label"] == "harmful"]
        base = _base(policy, args.over_shipped)

        def before(r: dict[str, Any], base: Base = base) -> str:
            return replay(r, base[0], 2, base[1], base[2])

        def added(items: list[dict[str, Any]]) -> int:  # allowed before, sent to review by the options
            return sum(
                before(r) == "allow" and replay(r, dissent, 2, short, seconded) == "review" for r in items
            )

        blocked = sum(before(r) != "allow" for r in harmless)
        early = sum(r["precheck"] == "harmful" for r in harmless)
        allowed = sum(before(r) == "allow" for r in harmful)
        row = (
            policy,
            split,
            len(harmless),
            blocked,
            early,
            added(harmless),
            len(harmful),
            allowed,
            added(harmful),
        )
        print("{:18} {:22} {:8d} {:8d} {:9d} {:9d} {:8d} {:8d} {:9d}".format(*row))
    if args.lost:
        _print_lost(groups)


def _print_lost(groups: dict[tuple[str, str], list[dict[str, Any]]]) -> None:
    """The scores of the harmful votes that lost the quorum (the item allowed), per detector."""
    print("\nscores of harmful votes that lost the quorum (allowed), per detector:")
    for (policy, split), group in sorted(groups.items()):
        for label in ("harmless", "harmful"):
            lost: dict[str, list[float]] = {}
            for row in group:
                if row["label"] != label or replay(row, {}) != "allow":
                    continue
                for vote in row["votes"]:
                    if vote["verdict"] == "harmful" and vote["score"] is not None:
                        lost.setdefault(vote["detector"], []).append(round(vote["score"], 4))
            for name, scores in sorted(lost.items()):
                print(f"  {policy} {split} {label} {name}: {sorted(scores, reverse=True)[:20]}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="command", required=True)
    votes = sub.add_parser("votes")
    votes.add_argument("--split", nargs="*", default=["train", "dev"])
    votes.add_argument("--policy", action="append")
    votes.add_argument("--releases", action="append", help="a real-release list whose diffs are cached")
    votes.add_argument("--records", action="append", help="a labelled JSONL file (its name: the split)")
    votes.add_argument("--out", required=True)
    table = sub.add_parser("table")
    table.add_argument("file")
    table.add_argument("--dissent", nargs="*", help="detector=min_score pairs")
    table.add_argument("--short-bytes", type=int, help="items up to this size take --short-dissent")
    table.add_argument("--short-dissent", nargs="*", help="detector=min_score pairs for short items")
    table.add_argument("--seconded", nargs="*", help="detector=min_score pairs of quorum.dissent_seconded")
    table.add_argument("--seconds", nargs="*", help="detector=min_score pairs that second them")
    table.add_argument("--seconded-up-to", type=int, help="the seconded dissent's up_to_bytes")
    table.add_argument("--lost", action="store_true", help="list the scores of losing harmful votes")
    table.add_argument(
        "--over-shipped",
        action="store_true",
        help="count from each policy's shipped dissent options, not from none: blocked, allowed and"
        " what goes to review are then those of the shipped policy and what the options add to it",
    )
    args = parser.parse_args()
    (votes_command if args.command == "votes" else table_command)(args)


if __name__ == "__main__":
    main()
