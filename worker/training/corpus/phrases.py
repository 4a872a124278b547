"""Phrase tables for the generated attacks, written for this project in ten languages.

An agent-directed injection is composed of an addressee (who is told), an opener (urgency,
politeness, authority), an action on a target (use a tool, send data out, delete, insert code,
run a command, change a decision), and a concealment request. Each language has its own
phrasings of each part (``phrases.json`` beside this module: English, Chinese, Spanish,
Portuguese, Russian, Japanese, German, French, Korean, Hindi); targets (addresses, paths,
commands) are language-neutral and filled in by :mod:`worker.training.corpus.generate`.
Placeholders: ``{url}`` ``{secret}`` ``{path}`` ``{cmd}`` ``{file}`` ``{code}`` ``{email}``
``{tool}`` ``{pkg}`` ``{iban}``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Language:
    addressees: tuple[str, ...]
    openers: tuple[str, ...]
    actions: dict[str, tuple[str, ...]]
    concealments: tuple[str, ...]
    steps: tuple[str, ...]  # "first", "then", "after that", "finally"


ACTION_KINDS = ("exfiltrate", "tool", "delete", "insert", "run", "override", "decide")

_TABLES = json.loads((Path(__file__).resolve().parent / "phrases.json").read_text(encoding="utf-8"))
LANGUAGES: dict[str, Language] = {
    code: Language(
        addressees=tuple(table["addressees"]),
        openers=tuple(table["openers"]),
        actions={kind: tuple(table["actions"][kind]) for kind in ACTION_KINDS},
        concealments=tuple(table["concealments"]),
        steps=tuple(table["steps"]),
    )
    for code, table in _TABLES["languages"].items()
}
_TARGETS: dict[str, tuple[str, ...]] = {name: tuple(values) for name, values in _TABLES["targets"].items()}
URLS = _TARGETS["URLS"]
TLDS = _TARGETS["TLDS"]
HOSTS = _TARGETS["HOSTS"]
SECRETS = _TARGETS["SECRETS"]
PATHS = _TARGETS["PATHS"]
COMMANDS = _TARGETS["COMMANDS"]
FILES = _TARGETS["FILES"]
CODES = _TARGETS["CODES"]
TOOLS = _TARGETS["TOOLS"]
EMAILS = _TARGETS["EMAILS"]
PACKAGES = _TARGETS["PACKAGES"]
IBANS = _TARGETS["IBANS"]
