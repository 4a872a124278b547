"""Is an injection still found when it is planted inside a real carrier? Dev attacks, planted.

    python benchmarks/planted.py [--policy prompt-injection] [--size 1024 --size 65536]...
        [--setup rules,lexical,semantic]... [--carriers N] [--by-kind] [--kind KIND]...
        [--mail-encoding 8bit|base64|quoted-printable] [--disguise KIND] [FILE.jsonl[.gz]]

The labelled records are short; what the gate reads is a README, a release diff, an e-mail, a
ticket, a table or tool output of 1-64 KB with the instruction somewhere inside. For every size,
this writes (1) each harmful record of ``FILE`` (default: the policy's dev split) planted at a
random depth in a carrier of that many bytes, and (2) ``--carriers`` carriers of that size alone
(labelled harmless). The carriers rotate over every kind the producers emit: a README, a release
diff (the record as added lines, comment lines or a docstring; the host: a harmless diff of the
malicious-package DEV split), an e-mail with headers and a MIME text part, an issue, a Markdown
table (the record in a cell), JSON tool output (the record in a string value) and a web page (the
record in an HTML comment, a ``display:none`` block or a paragraph). Two more kinds of tool output
are read only when named (``--kind csv``, ``--kind log``), so the default figures stay comparable:
a CSV export as ``csv.writer`` writes it (the record in a field) and a service's log (the record
as a message after a timestamp, a level and a logger's name). The prose comes from
registry READMEs that no model was trained on (``worker/training/corpus/data/carriers.jsonl.gz``).
It runs ``canary eval --json`` on the bare records and on each planted copy, and prints the
detection rate bare and planted, and the false-positive rate of the carriers alone; ``--by-kind``
adds both per kind of carrier for each size (where the attacks are lost, which carriers are blocked
alone). ``--kind`` keeps only those kinds (``--kind email``: every record in an e-mail);
``--mail-encoding`` sends the e-mails' text part base64 or quoted-printable, as most mailers send
non-ASCII text (the size is the text's, before encoding); ``--disguise`` writes each record's
letters, bare and planted, in a disguise a language model reads through: as HTML character
references (``references``: ``&#73;&#103;...``), fullwidth (``fullwidth``), mathematical bold
(``bold``), with look-alike Cyrillic letters (``lookalike``) or a zero-width space after each
character (``zero-width``). Nothing is trained or tuned here.
"""

from __future__ import annotations

import argparse
import base64
import csv
import io
import json
import quopri
import random
import tempfile
from collections.abc import Callable
from pathlib import Path

from harness import evaluate, evaluate_records, read_records

from worker.training.data import default_datasets_dir

CARRIERS_FILE = (
    Path(__file__).resolve().parents[1] / "worker" / "training" / "corpus" / "data" / "carriers.jsonl.gz"
)
KINDS = ("readme", "diff", "email", "ticket", "table", "json", "web")
# Tool output a run reads only when asked (``--kind csv``): not in the default rotation, so the
# default figures stay comparable across dates.
MORE_KINDS = ("csv", "log")
_LEVELS = ("INFO", "INFO", "INFO", "DEBUG", "WARNING", "ERROR")
_LOGGERS = ("app", "worker.tasks", "uvicorn.access", "celery.beat", "db.pool", "httpx")


def _prose(rng: random.Random, readmes: list[str], size: int) -> str:
    """README text joined until ``size`` bytes."""
    pieces, total = [], 0
    while total < size:
        piece = rng.choice(readmes)
        pieces.append(piece)
        total += len(piece.encode("utf-8")) + 2
    return "\n\n".join(pieces).encode("utf-8")[:size].decode("utf-8", "ignore")


def _split(rng: random.Random, text: str) -> tuple[str, str]:
    """``text`` cut at a random line boundary (a random depth)."""
    cut = rng.randrange(len(text) + 1)
    cut = text.rfind("\n", 0, cut) + 1
    return text[:cut], text[cut:]


def _diff(rng: random.Random, diffs: list[str], size: int, payload: str | None) -> str:
    host = ""
    while len(host.encode("utf-8")) < size:
        host += rng.choice(diffs)
    host = host.encode("utf-8")[:size].decode("utf-8", "ignore")
    if payload is None:
        return host
    prefix = rng.choice(("+", "+# ", "+// ", "+ * "))
    before, after = _split(rng, host)
    return before + "\n".join(prefix + line for line in payload.split("\n")) + "\n" + after


def _email(body: str, encoding: str) -> str:
    """An e-mail with ordinary headers whose one text part is ``body``, sent as ``encoding`` (``8bit``:
    as it stands; ``base64`` or ``quoted-printable``: as most mailers send text with non-ASCII or
    long lines)."""
    headers = (
        "From: team@news.example.org\nTo: user@example.com\nSubject: Monthly update\n"
        "Date: Mon, 3 Nov 2025 08:00:00 +0000\nMessage-ID: <a1b2c3@news.example.org>\nMIME-Version: 1.0\n"
        "Content-Type: text/plain; charset=utf-8\n"
    )
    raw = body.encode("utf-8")
    if encoding == "base64":
        text = base64.encodebytes(raw).decode("ascii")
    elif encoding == "quoted-printable":
        text = quopri.encodestring(raw).decode("ascii")
    else:
        return headers + "\n" + body
    return headers + f"Content-Transfer-Encoding: {encoding}\n\n" + text


def _table(rng: random.Random, host: str, flat: str | None) -> str:
    """A Markdown table of the host's lines, ``flat`` in a cell of its own row."""
    rows = [
        f"| {i} | {line[:80].replace('|', '/')} |" for i, line in enumerate(host.split("\n")) if line.strip()
    ]
    if flat is not None:
        rows.insert(rng.randrange(len(rows) + 1), f"| {len(rows)} | {flat.replace('|', '/')} |")
    return "| # | note |\n|---|---|\n" + "\n".join(rows) + "\n"


def _json(rng: random.Random, host: str, flat: str | None) -> str:
    """A search tool's JSON answer of the host's paragraphs, ``flat`` as one snippet."""
    items = [{"id": i, "snippet": p} for i, p in enumerate(p for p in host.split("\n\n") if p.strip())]
    if flat is not None:
        items.insert(rng.randrange(len(items) + 1), {"id": len(items), "snippet": flat})
    return json.dumps({"tool": "search", "results": items}, ensure_ascii=False)


def _lines(rng: random.Random, host: str, flat: str | None) -> list[str]:
    lines = [line for line in host.split("\n") if line.strip()]
    if flat is not None:
        lines.insert(rng.randrange(len(lines) + 1), flat)
    return lines


def _csv(rng: random.Random, host: str, flat: str | None) -> str:
    """An export as csv.writer writes it (a field quoted where it holds a comma or a quote)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(("id", "author", "comment", "votes"))
    for i, line in enumerate(_lines(rng, host, flat)):
        writer.writerow((i, rng.choice(("ana", "bo", "chen", "dev-bot")), line, rng.randrange(40)))
    return buffer.getvalue()


def _log(rng: random.Random, host: str, flat: str | None) -> str:
    """A service's log: each line after a timestamp, a level and a logger's name."""
    return "".join(
        f"2026-03-{1 + i // 5000:02d}T{i // 3600 % 24:02d}:{i // 60 % 60:02d}:{i % 60:02d}.{rng.randrange(1000):03d}Z"
        f" {rng.choice(_LEVELS):7} [{rng.choice(_LOGGERS)}] {line}\n"
        for i, line in enumerate(_lines(rng, host, flat))
    )


_TOOL_OUTPUT: dict[str, Callable[[random.Random, str, str | None], str]] = {
    "table": _table,
    "json": _json,
    "csv": _csv,
    "log": _log,
}


def _carrier(
    kind: str,
    rng: random.Random,
    readmes: list[str],
    diffs: list[str],
    size: int,
    payload: str | None,
    mail_encoding: str = "8bit",
) -> str:
    if kind == "diff":
        return _diff(rng, diffs, size, payload)
    before, after = _split(rng, _prose(rng, readmes, size))
    inside: Callable[[str], str] = lambda body: before + body + after  # noqa: E731
    if kind == "readme":
        return inside("" if payload is None else payload + "\n")
    if kind == "email":
        return _email(inside("" if payload is None else payload + "\n"), mail_encoding)
    if kind == "ticket":
        return "Issue #4821: Build fails after upgrade\nStatus: open\n\n" + inside(
            "" if payload is None else payload + "\n"
        )
    flat = None if payload is None else payload.replace("\n", " ")
    if kind in _TOOL_OUTPUT:
        return _TOOL_OUTPUT[kind](rng, before + after, flat)
    hide = rng.choice(("<!-- {p} -->", '<div style="display:none">{p}</div>', "<p>{p}</p>"))
    return (
        "<html><body>\n" + inside("" if flat is None else hide.format(p=flat) + "\n") + "\n</body></html>\n"
    )


_CYRILLIC = dict(zip("aeopcxyABEKMHOPCTX", "аеорсхуАВЕКМНОРСТХ", strict=True))
DISGUISES: dict[str, Callable[[str], str]] = {
    # each letter as a decimal HTML character reference: words to a browser, digits to a byte model
    "references": lambda text: "".join(f"&#{ord(c)};" if c.isalpha() else c for c in text),
    "fullwidth": lambda text: "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in text),
    "bold": lambda text: "".join(
        chr(0x1D41A + ord(c) - 97)
        if "a" <= c <= "z"
        else chr(0x1D400 + ord(c) - 65)
        if "A" <= c <= "Z"
        else c
        for c in text
    ),
    "lookalike": lambda text: "".join(_CYRILLIC.get(c, c) for c in text),
    "zero-width": lambda text: "\u200b".join(text),
}


def write_planted(
    records: list[dict[str, str]],
    out: Path,
    readmes: list[str],
    diffs: list[str],
    size: int,
    carriers: int,
    seed: int,
    kinds: tuple[str, ...] = KINDS,
    mail_encoding: str = "8bit",
    disguise: str | None = None,
) -> None:
    """The harmful records planted in carriers of ``size`` bytes, then ``carriers`` carriers alone;
    the kinds of carrier taken in turn; each record in ``disguise`` (:data:`DISGUISES`) if given."""
    rng = random.Random(seed)
    with out.open("w", encoding="utf-8") as dst:
        for index, record in enumerate(records):
            kind = kinds[index % len(kinds)]
            payload = DISGUISES[disguise](record["text"]) if disguise else record["text"]
            room = max(0, size - len(payload.encode("utf-8")))
            text = _carrier(kind, rng, readmes, diffs, room, payload, mail_encoding)
            dst.write(json.dumps({**record, "text": text, "source": f"planted-{kind}"}) + "\n")
        for index in range(carriers):
            kind = kinds[index % len(kinds)]
            text = _carrier(kind, rng, readmes, diffs, size, None, mail_encoding)
            dst.write(
                json.dumps(
                    {
                        "id": f"carrier-{kind}-{index}",
                        "text": text,
                        "label": "harmless",
                        "source": f"carrier-{kind}",
                    }
                )
                + "\n"
            )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("file", nargs="?")
    parser.add_argument("--policy", default="prompt-injection")
    parser.add_argument(
        "--size", type=int, action="append", help="bytes; repeatable (default 1024, 8192, 65536)"
    )
    parser.add_argument("--carriers", type=int, default=140, help="carriers alone per size")
    parser.add_argument("--setup", action="append", help="detector setups (default: the shipped gate)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--by-kind", action="store_true", help="also the rates per kind of carrier")
    parser.add_argument(
        "--kind",
        action="append",
        choices=KINDS + MORE_KINDS,
        help="only these kinds of carrier (repeatable; default all but csv and log)",
    )
    parser.add_argument(
        "--disguise", choices=sorted(DISGUISES), help="write each record's letters in this disguise"
    )
    parser.add_argument(
        "--mail-encoding",
        choices=("8bit", "base64", "quoted-printable"),
        default="8bit",
        help="how the e-mail carriers send their text part (default 8bit: as it stands)",
    )
    args = parser.parse_args()
    source = Path(args.file or default_datasets_dir() / args.policy / "dev.jsonl.gz")
    records = [r for r in read_records(source) if r["label"] == "harmful"]
    bare = [{**r, "text": DISGUISES[args.disguise](r["text"])} for r in records] if args.disguise else records
    readmes = [r["text"] for r in read_records(CARRIERS_FILE)]
    diffs = [
        r["text"]
        for r in read_records(default_datasets_dir() / "malicious-package" / "dev.jsonl.gz")
        if r["label"] == "harmless"
    ]
    setups = tuple(args.setup or ("rules,lexical,semantic",))
    kinds = tuple(kind for kind in KINDS + MORE_KINDS if kind in (args.kind or KINDS))
    mail = f" (e-mails sent {args.mail_encoding})" if "email" in kinds else ""
    print(
        f"# {len(records)} harmful records of {source} under {args.policy}: bare, and planted in carriers of {', '.join(kinds)}{mail}"
    )
    print(
        f"{'setup':24} {'input':>8} {'attacks':>7} {'caught':>7} {'rate':>7} {'carriers':>8} {'FP':>4} {'FPR':>6}"
    )
    with tempfile.TemporaryDirectory(prefix="canary-planted-") as scratch:
        for row in evaluate_records(bare, args.policy, setups):
            caught = int(row["n"]) - int(row["fn"])
            print(
                f"{row['setup']!s:24} {'bare':>8} {row['n']:7d} {caught:7d} {caught / max(1, int(row['n'])):7.1%}",
                flush=True,
            )
        for size in args.size or [1024, 8192, 65536]:
            path = Path(scratch) / f"planted-{size}.jsonl"
            write_planted(
                records,
                path,
                readmes,
                diffs,
                size,
                args.carriers,
                args.seed + size,
                kinds,
                args.mail_encoding,
                args.disguise,
            )
            for row in evaluate(path, args.policy, setups):
                attacks = int(row["n"]) - args.carriers
                caught = attacks - int(row["fn"])
                print(
                    f"{row['setup']!s:24} {size:8d} {attacks:7d} {caught:7d} {caught / max(1, attacks):7.1%}"
                    f" {args.carriers:8d} {row['fp']:4d} {int(row['fp']) / max(1, args.carriers):6.1%}",
                    flush=True,
                )
                if args.by_kind:
                    print_by_kind(row, kinds)


def print_by_kind(row: dict, kinds: tuple[str, ...] = KINDS) -> None:
    """One line per carrier kind of a planted run: attacks caught in it, and it blocked alone."""
    by_source = row.get("by_source", {})
    for kind in kinds:
        planted = by_source.get(f"planted-{kind}", {})
        alone = by_source.get(f"carrier-{kind}", {})
        attacks, missed = int(planted.get("n", 0)), int(planted.get("fn", 0))
        carriers, blocked = int(alone.get("n", 0)), int(alone.get("fp", 0))
        print(
            f"{'':24} {'  ' + kind:>8} {attacks:7d} {attacks - missed:7d} {(attacks - missed) / max(1, attacks):7.1%}"
            f" {carriers:8d} {blocked:4d} {blocked / max(1, carriers):6.1%}",
            flush=True,
        )


if __name__ == "__main__":
    main()
