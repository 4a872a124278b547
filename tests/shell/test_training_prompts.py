"""The generated app-prompt negatives (worker/training/corpus/prompts.py): LLM applications' own
prompts written in their code, harmless."""

from __future__ import annotations

import gzip
import json
from collections import Counter

from worker.training.corpus import prompts
from worker.training.corpus.__main__ import _readme_fillers, write_prompts
from worker.training.data import APP_PROMPTS_FILE, extra_corpus

FILLER = "# pkg\n\nThe pkg package parses configuration files.\n\nIt has no dependencies.\n" * 4


def _records(path):
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        return [json.loads(line) for line in handle]


def test_records_are_deterministic_harmless_and_grouped_by_shape():
    records = prompts.prompt_records([FILLER])
    assert records == prompts.prompt_records([FILLER])
    assert records != prompts.prompt_records([FILLER], seed=1)
    groups = Counter(r["group"] for r in records)
    assert set(groups) == {f"app-prompt:{shape}" for shape in prompts.SHAPES}
    assert set(groups.values()) == {prompts.PER_SHAPE}
    assert {r["label"] for r in records} == {"harmless"}
    assert Counter(r["how"].split(" in ")[-1] for r in records) == {
        carrier: len(records) // 3 for carrier in ("bare", "readme", "diff")
    }


def test_every_shape_holds_its_prompt_in_code_and_fills_its_placeholders():
    """The prompt sits in the shape's code (a README keeps it in a fenced block, a diff on added
    lines), with no placeholder left."""
    for record in prompts.prompt_records([FILLER]):
        text, carrier = record["text"], record["how"].split(" in ")[-1]
        assert "{product}" not in text
        if carrier == "readme":
            assert "## Usage\n\n```" in text and FILLER.split("\n")[2] in text
        if carrier == "diff":
            assert text.startswith("diff --git a/") and "\n+" in text


def test_the_command_writes_the_records_and_counts_them_in_the_manifest(built_corpus):
    out = built_corpus
    write_prompts(out)
    records = _records(out / prompts.FILE_NAME)
    assert records and all("not a filler" not in r["text"] for r in records)
    counted = json.loads((out / "MANIFEST.json").read_text(encoding="utf-8"))["app-prompts"]["counts"]
    assert counted == {"harmful": 0, "harmless": len(records)}


def test_the_committed_records_are_the_generators_and_are_trained_on():
    """The committed file is what the command writes from the committed corpus's README slices, and
    part of the prompt-injection extra corpus."""
    records = _records(APP_PROMPTS_FILE)
    assert records == prompts.prompt_records(_readme_fillers(APP_PROMPTS_FILE.parent))
    assert set(extra_corpus("prompt-injection").ids) >= {r["id"] for r in records}
