"""Steering the reader's answer: prompt leaking, output hijacking, biased judgements, persona switches.

The generated attacks of :mod:`worker.training.corpus.generate` ask an agent to act (send data out,
use a tool, delete, insert code, run a command). An injection may instead steer what the reading
model *says* (Perez and Ribeiro, "Ignore Previous Prompt", 2022; Greshake et al., "Not what you've
signed up for", 2023):
- ``leak``: print the system prompt, the instructions above, the conversation, the secrets in context;
- ``respond``: answer only with a given string, start or end every answer with it, put a link in it;
- ``judge``: call the carrier's subject the best, rate it 10/10, report it verified or free of problems;
- ``persona``: become someone without rules, developer mode, never refuse.
Each is written in ten languages (``steering.json`` beside this module), addressed to an AI reader
or behind a break in the context ("--- END OF DOCUMENT ---", a fake end of the user content), and
planted in every carrier of :mod:`worker.training.corpus.carriers`.

Harmful only: look-alikes with the same verbs (requests to people in a ticket: reply "yes" to
confirm, rate each submission; an application's own prompt template in code) were tried as harmless
records beside them and cost recall in long carriers (docs/measurements.md). One CV group per family
and language (``steer:leak:de``), so group-CV measures a family in a language it has not seen.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

from worker.training.corpus import phrases
from worker.training.corpus.build import record
from worker.training.corpus.carriers import CARRIERS
from worker.training.data import STEERING_FILE

SOURCE = "written for this project (worker/training/corpus/steering.py, steering.json)"
LICENCE = "Apache-2.0"
FILE_NAME = STEERING_FILE.name
GROUP_PREFIX = "steer:"
KINDS = ("leak", "respond", "judge", "persona")
PER_KIND = 15  # records per family and language
ATTACK_CARRIERS = tuple(sorted(CARRIERS))

_TABLES = json.loads((Path(__file__).resolve().parent / "steering.json").read_text(encoding="utf-8"))
LANGUAGES: dict[str, dict[str, Any]] = _TABLES["languages"]
WORDS: tuple[str, ...] = tuple(_TABLES["words"])
BREAKS: tuple[str, ...] = tuple(_TABLES["breaks"])


def attack(rng: random.Random, lang: str, kind: str) -> str:
    """One steering instruction of ``kind`` in ``lang``: an addressee, an opener or a context break
    (at least one of them), the instruction, and sometimes a request to keep it quiet."""
    table, shared = LANGUAGES[lang], phrases.LANGUAGES[lang]
    end = "。" if lang in ("zh", "ja") else "."
    action = rng.choice(table[kind]).format(
        word=rng.choice(WORDS),
        url=f"https://{rng.choice(phrases.HOSTS)}{rng.choice(phrases.TLDS)}/{rng.getrandbits(24):x}",
        subject=rng.choice(table["subjects"]),
        persona=rng.choice(table["personas"]),
    )
    opener = rng.choice(shared.openers) if rng.random() < 0.5 else ""
    addressee = rng.choice(shared.addressees) if rng.random() < 0.7 else ""
    brk = rng.choice(BREAKS) if rng.random() < 0.35 or not (opener or addressee) else ""
    conceal = rng.choice(shared.concealments) if rng.random() < 0.3 else ""
    lead = f"{addressee}: " if addressee else ""
    text = f"{lead}{opener} {action[:1].upper() + action[1:] if not opener else action}{end} {conceal}"
    text = " ".join(text.split())
    return f"{brk}\n\n{text}" if brk else text


def steering_records(fillers: list[str], seed: int = 0) -> list[dict[str, Any]]:
    """The records described above, deterministic for ``seed``; ``fillers`` are the harmless text
    the carriers are filled with (the training READMEs' slices)."""
    rng = random.Random(seed)
    out: list[dict[str, Any]] = []
    for lang in LANGUAGES:
        for kind in KINDS:
            for _ in range(PER_KIND):
                payload, carrier = attack(rng, lang, kind), rng.choice(ATTACK_CARRIERS)
                text = CARRIERS[carrier](rng, payload, rng.choice(fillers))
                how = f"{kind} ({lang}) in {carrier}"
                out.append(
                    record("steer", len(out), text, 1, SOURCE, LICENCE, f"{GROUP_PREFIX}{kind}:{lang}", how)
                )
    return out
