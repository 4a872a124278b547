"""Does an e-mail's header block change the verdict? The labelled records, bare and behind headers.

    python benchmarks/mail_headers.py [--policy prompt-injection] [--seed 0] [--reserved-domains]
        [FILE.jsonl[.gz]]

The labelled corpora hold message bodies; what ``canary scan mbox:…`` gates is the whole
message, headers included (addresses, a message id, MIME lines). This writes a copy of
``FILE`` (default: the policy's dev split) whose every text is preceded by a generated,
ordinary RFC 5322 header block, runs ``canary eval --json`` on both files with the same
detector setups, and prints n, FN, FP, FNR and FPR of each setup, bare and with headers. A
detector that reads an address or a message id as a sign of exfiltration shows up as a rise in
FPR on the copy; one whose signal drowns in the header block shows up as a rise in FNR. Nothing
is trained or tuned here (the training's own header generator, ``worker.training.mail``, shares
no names, domains or subjects with this one).
"""

from __future__ import annotations

import random
import tempfile
from pathlib import Path

from harness import SHIPPED_SETUPS as SETUPS
from harness import arguments, evaluate, read_records, split_path, write_records

NAMES = ("Dana Reyes", "Li Wei", "Amara Okafor", "Jonas Berg", "Priya Nair", "Sam Carter", "Elena Rossi")
# Ordinary mail domains. The reserved example.* names (RFC 2606) are what attack corpora use for
# an attacker's address: "example.com" is in 55 harmful prompt-injection train texts and 1 harmless
# one, so headers full of it measure that coincidence more than headers (--reserved-domains shows it).
DOMAINS = ("gmail.com", "outlook.com", "acme-corp.com", "fastmail.fm", "uni-heidelberg.de", "northwind.io")
RESERVED_DOMAINS = ("example.com", "example.org", "mail.example.net", "corp.example", "example.co.uk")
SUBJECTS = ("Re: follow-up", "Weekly update", "Question", "Fwd: notes", "Your request", "Re: meeting")


def headers(rng: random.Random, domains: tuple[str, ...] = DOMAINS) -> str:
    """From, To (sometimes Cc), Subject, Date, Message-ID and the MIME lines of a plain-text mail."""

    def address() -> str:
        name = rng.choice(NAMES)
        return f"{name} <{name.lower().replace(' ', '.')}@{rng.choice(domains)}>"

    lines = [f"From: {address()}", f"To: {address()}"]
    if rng.random() < 0.3:
        lines.append(f"Cc: {address()}, {address()}")
    lines += [
        f"Subject: {rng.choice(SUBJECTS)}",
        f"Date: Wed, {rng.randint(1, 28):02d} May 2024 {rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:00 +0000",
        f"Message-ID: <{rng.getrandbits(64):x}.{rng.getrandbits(32):x}@{rng.choice(domains)}>",
        "MIME-Version: 1.0",
        'Content-Type: text/plain; charset="utf-8"',
        f"Content-Transfer-Encoding: {rng.choice(('7bit', '8bit'))}",
    ]
    return "\n".join(lines) + "\n\n"


def main() -> None:
    parser = arguments(__doc__)
    parser.add_argument("file", nargs="?")
    parser.add_argument("--policy", default="prompt-injection")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--reserved-domains",
        action="store_true",
        help="addresses at example.com & co. instead of ordinary domains",
    )
    args = parser.parse_args()
    source = Path(args.file) if args.file else split_path(args.policy, "dev")
    rng = random.Random(args.seed)
    domains = RESERVED_DOMAINS if args.reserved_domains else DOMAINS
    with tempfile.TemporaryDirectory() as tmp:
        wrapped = write_records(
            Path(tmp) / "with-headers.jsonl",
            [{**r, "text": headers(rng, domains) + r["text"]} for r in read_records(source)],
        )
        results = {"bare": evaluate(source, args.policy), "headers": evaluate(wrapped, args.policy)}
    print(f"# {source} under {args.policy}: bare texts vs the same texts behind e-mail headers")
    print(f"{'setup':24s} {'input':8s} {'n':>5s} {'FN':>4s} {'FP':>4s} {'FNR':>7s} {'FPR':>7s}")
    for index, setup in enumerate(SETUPS):
        for kind, summaries in results.items():
            s = summaries[index]
            print(
                f"{setup:24s} {kind:8s} {s['n']:5d} {s['fn']:4d} {s['fp']:4d}"
                f" {100 * s['fnr']:6.1f}% {100 * s['fpr']:6.1f}%"
            )


if __name__ == "__main__":
    main()
