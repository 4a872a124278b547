"""Planting text in carriers: the shapes in which the gate reads a record, as training text.

Each function takes a record's text (or none) and harmless host prose and returns one artifact:
README prose, an e-mail, an issue, a Markdown or CSV table, JSON tool output or a web page. The
corpus functions that use them (labels, groups, ids) are in :mod:`worker.training.data`.
"""

from __future__ import annotations

import json
import random

import numpy as np

# Carriers: each record also gets a second copy inside a harmless carrier of log-uniform 128 B-16 KB of
# README text (cut from the extra corpus's long README documents), shaped as one of the kinds the
# producers emit, at a random depth: README prose (the record as it is, as an HTML comment or as a
# quotation), an e-mail with headers and a MIME text part, an issue with comments, a Markdown or CSV
# table (the record in a cell), JSON tool output (the record in a string value) or a web page (the
# record in a paragraph or in hidden markup). The models learn the instruction apart from the
# carrier around it; the same shapes around harmless records keep the shape itself harmless.
LONG_PLANTED_SIZES = (128, 16384)
_PROSE_FORMATS = ("{}", "<!-- {} -->", "> {}")
_HIDDEN_FORMATS = (
    "<p>{}</p>",
    "<!-- {} -->",
    '<div style="display:none">{}</div>',
    '<span style="color:#fff;font-size:0">{}</span>',
    "<details><summary>Details</summary>{}</details>",
    '<p hidden aria-hidden="true">{}</p>',
)
_SENDERS = ("alerts@service.example", "jo.martin@partner.example", "digest@lists.example.net")
_SUBJECTS = ("Weekly digest", "Re: your request", "Invoice and notes", "Fwd: project status")
_TITLES = ("Error after update", "Question about setup", "Feature request", "Timeout in CI")


def cut_prose(
    rng: random.Random, prose: list[str], sizes: tuple[int, int] = LONG_PLANTED_SIZES, fill: bool = False
) -> str:
    """A random-size cut (``sizes``, log-uniform) of a random ``prose`` document; ``fill``: more
    documents' cuts joined after it, where one is too short for the size."""
    low, high = (np.log(size) for size in sizes)
    size = int(np.exp(rng.uniform(low, high)))
    pieces: list[bytes] = []
    total = 0
    while not pieces or (fill and total < size):
        data = rng.choice(prose).encode("utf-8")
        start = rng.randrange(max(1, len(data) - (size - total)))
        pieces.append(data[start : start + size - total])
        total += len(pieces[-1]) + 2
    return b"\n\n".join(pieces).decode("utf-8", errors="ignore")


def _at_line(rng: random.Random, host: str, body: str) -> str:
    """``body`` as its own line(s) at a random line boundary of ``host``."""
    cut = host.rfind("\n", 0, rng.randrange(len(host) + 1)) + 1
    return f"{host[:cut]}{body}\n{host[cut:]}"


def _in_rows(rng: random.Random, host: str, text: str) -> str:
    """The host's lines as table rows (Markdown or CSV), ``text`` flattened into one cell."""
    flat = " ".join(text.split())
    lines = [" ".join(line.split())[:100] for line in host.split("\n") if line.strip()]
    if rng.random() < 0.5:
        rows = [
            f"| {i} | {line.replace('|', '/')} | {rng.randrange(1, 99)} |" for i, line in enumerate(lines, 1)
        ]
        rows.insert(rng.randrange(len(rows) + 1), f"| {len(rows) + 1} | {flat.replace('|', '/')} | 0 |")
        return "| # | entry | n |\n|---|---|---|\n" + "\n".join(rows) + "\n"
    rows = [
        f'{i},"{line.replace(chr(34), chr(39))}",{rng.randrange(1, 99)}' for i, line in enumerate(lines, 1)
    ]
    rows.insert(rng.randrange(len(rows) + 1), f'{len(rows) + 1},"{flat.replace(chr(34), chr(39))}",0')
    return "id,entry,n\n" + "\n".join(rows) + "\n"


def _in_json(rng: random.Random, host: str, text: str) -> str:
    """The host's paragraphs as JSON tool output, ``text`` as one string value among them."""
    paragraphs = [p.strip() for p in host.split("\n\n") if p.strip()] or [host]
    key = rng.choice(("snippet", "content", "body", "text"))
    items: list[dict[str, object]] = [{"id": i, key: p} for i, p in enumerate(paragraphs)]
    items.insert(rng.randrange(len(items) + 1), {"id": len(items), key: text})
    doc = {rng.choice(("results", "items", "data", "messages")): items, "status": "ok"}
    return json.dumps(doc, indent=rng.choice((None, 2)), ensure_ascii=False)


def planted_in_carrier(
    rng: random.Random, text: str | None, prose: list[str], host: str | None = None, whole: bool = False
) -> str:
    """``text`` inside a 128 B-16 KB carrier of a random kind made of ``prose`` (see above), or
    made of ``host`` if given; with ``text`` None, the carrier alone (``whole``: see :func:`carrier_alone`)."""
    host = cut_prose(rng, prose) if host is None else host
    if text is None:
        return carrier_alone(rng, host, whole)
    kind = rng.randrange(6)
    if kind == 0:  # README prose
        return _at_line(rng, host, rng.choice(_PROSE_FORMATS).format(text))
    if kind == 1:  # e-mail: a random choice and order of the usual headers
        fields = [
            f"From: {rng.choice(_SENDERS)}",
            f"To: {rng.choice(('me@example.org', 'team@corp.example', 'Ana <ana@home.example>'))}",
            f"Subject: {rng.choice(_SUBJECTS)}",
        ]
        optional = [
            f"Date: Wed, {rng.randrange(1, 28)} Aug 2026 1{rng.randrange(10)}:{rng.randrange(60):02d}:00 +0200",
            f"Message-ID: <{rng.getrandbits(40):x}@mx.example.net>",
            "MIME-Version: 1.0",
            f"Content-Type: text/plain; charset={rng.choice(('utf-8', 'UTF-8', 'us-ascii'))}",
            f"Content-Transfer-Encoding: {rng.choice(('8bit', '7bit', 'quoted-printable'))}",
            "Cc: ops@corp.example",
            f"Reply-To: {rng.choice(_SENDERS)}",
        ]
        fields += rng.sample(optional, rng.randrange(len(optional) + 1))
        rng.shuffle(fields)
        return "\n".join(fields) + "\n\n" + _at_line(rng, host, text)
    if kind == 2:  # issue or ticket
        head = f"#{rng.randrange(10, 99999)} {rng.choice(_TITLES)}\nopened by user{rng.randrange(999)} · {rng.choice(('bug', 'question', 'triage'))}\n\n"
        return head + _at_line(rng, host, text) + "\n---\nmaintainer commented: thanks, will look.\n"
    if kind == 3:
        return _in_rows(rng, host, text)
    if kind == 4:
        return _in_json(rng, host, text)
    body = "\n".join(f"<p>{p.strip()}</p>" for p in host.split("\n\n") if p.strip())
    page = _at_line(rng, body, rng.choice(_HIDDEN_FORMATS).format(" ".join(text.split())))
    return f"<!doctype html><html><head><title>Docs</title></head><body>\n{page}</body></html>\n"


def carrier_alone(rng: random.Random, host: str, whole: bool = False) -> str:
    """A carrier of a random kind around ``host`` with nothing planted (the shapes of
    :func:`planted_in_carrier`). ``whole``: ``host`` as it is; else cut again to a random size, as
    the shipped models were trained (so a carrier alone is smaller than a planted copy's host)."""
    lines = [line for line in host.split("\n") if line.strip()] or [host]
    # the carrier is built around one of its own lines, moved in as the planted text would be
    line = lines.pop(rng.randrange(len(lines)))
    rest = "\n".join(lines)
    return planted_in_carrier(rng, line, [], host=rest) if whole else planted_in_carrier(rng, line, [rest])


def harmless_payload(rng: random.Random) -> str:
    """A generated look-alike payload: a hard negative (7 in 10) or an ordinary note, in one of
    the corpus's languages (English half the time)."""
    from worker.training.corpus import generate, negatives, phrases

    others = [code for code in phrases.LANGUAGES if code != "en"]
    lang = "en" if rng.random() < 0.5 else rng.choice(others)
    if rng.random() < 0.7:
        return generate.hard_negative(rng, lang, rng.choice(negatives.KINDS))
    return generate.benign_payload(rng, lang)


# The long carriers only scored (worker.training.data.with_long_scored): 16-64 KB, ``fill``ed.
LONG_SCORED_SIZES = (16384, 65536)
