"""The shared context of attacks planted in one document, as a harmless record of its own
(``python -m worker.training --clean-contexts``; not in the shipped recipe).

Benchmarks that plant an attack into a context (BIPIA's e-mails and code answers, spikee's
documents) give the same context several times as harmful, each time with another attack at its
start, middle or end, and the context alone rarely or never: a model learns the context's words
as harmful (in sample, the gate of 2026-11-28 quarantined 59 of train's 141 clean BIPIA
contexts). Each such context, recovered from the records themselves, becomes a harmless record,
so that only the attack tells the two apart. A group of its own: it weighs as much as the
group's attacks together (they share one group); in cross-validation it may fall in another
fold than its attacks, which can only make the out-of-fold scores harder, never easier.
Not in the shipped recipe (``--clean-contexts``): trained with it on 2026-11-28 (66 contexts),
the quorum's train group-CV FNR rose 9.1 -> 12.3 % and its planted-copy FNR 12.0 -> 15.8 %, for
an FPR of 6.2 -> 5.6 % with the contexts among the harmless; reported on dev, FN / FP 16 / 25 ->
20 / 22 (BIPIA's clean contexts 19 -> 17 of 37 blocked), short harmless sentences 3.9 -> 1.5 %.
The models do not tell an off-task question planted in an e-mail from the e-mail's own requests.
"""

from __future__ import annotations

import os
from pathlib import Path

from worker.training.data import Corpus, joined, read_records

CONTEXT_SUFFIX = "#context"
MIN_CONTEXT_CHARS = 100  # a shorter common part is a template's phrase, not a document


def with_clean_contexts(corpus: Corpus, datasets_dir: Path, policy: str, split: str) -> Corpus:
    """``corpus`` plus, for each group of the split whose harmful records name where their attack
    was placed (a source ending in ``:start`` or ``:end``, two or more of one position), the
    context they share, as a harmless record: the common suffix of the ``:start`` records (from
    its first line break) or the common prefix of the ``:end`` records (up to its last one),
    whichever is longer, kept only when every ``:start`` and ``:end`` record of the group holds
    it whole and it is at least ``MIN_CONTEXT_CHARS`` long."""
    placed: dict[str, dict[str, list[str]]] = {}
    first_id: dict[str, str] = {}
    for record in read_records(datasets_dir / policy / f"{split}.jsonl.gz"):
        position = str(record.get("source", "")).rpartition(":")[2]
        if record["label"] == "harmful" and position in ("start", "end"):
            placed.setdefault(record["group"], {}).setdefault(position, []).append(record["text"])
            first_id.setdefault(record["group"], record["id"])
    contexts = Corpus(texts=[], labels=[], groups=[], ids=[])
    for group, by_position in placed.items():
        context = _shared_context(by_position.get("start", []), by_position.get("end", []))
        if context is not None:
            contexts.texts.append(context)
            contexts.labels.append(0)
            contexts.groups.append(f"{group}{CONTEXT_SUFFIX}")
            contexts.ids.append(f"{first_id[group]}{CONTEXT_SUFFIX}")
    return joined(corpus, contexts)


def _shared_context(starts: list[str], ends: list[str]) -> str | None:
    """The context that attacks placed at the start (``starts``) and at the end (``ends``) of one
    document share (see :func:`with_clean_contexts`), or None."""
    found: list[str] = []
    if len(starts) >= 2:
        suffix = os.path.commonprefix([text[::-1] for text in starts])[::-1]
        found.append(suffix[suffix.find("\n") + 1 :] if "\n" in suffix else "")
    if len(ends) >= 2:
        prefix = os.path.commonprefix(ends)
        found.append(prefix[: prefix.rfind("\n")] if "\n" in prefix else "")
    context = max(found, key=len, default="").strip()
    if len(context) < MIN_CONTEXT_CHARS or not all(context in text for text in starts + ends):
        return None
    return context
