"""The generated steering records (worker/training/corpus/steering.py): leak, respond, judge, persona."""

from __future__ import annotations

import gzip
import json
import random
from collections import Counter

from worker.training.corpus import phrases, steering
from worker.training.corpus.__main__ import _readme_fillers, write_steering
from worker.training.data import STEERING_FILE, extra_corpus

FILLER = "# pkg\n\nThe pkg package parses configuration files.\n\nIt has no dependencies.\n" * 4


def _records(path):
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        return [json.loads(line) for line in handle]


def test_every_family_is_written_in_every_language_and_fills_its_placeholders():
    assert set(steering.LANGUAGES) == set(phrases.LANGUAGES)
    rng = random.Random(0)
    for lang, table in steering.LANGUAGES.items():
        for kind in steering.KINDS:
            assert len(table[kind]) >= 4
            for _ in range(20):
                text = steering.attack(rng, lang, kind)
                assert "{" not in text and "}" not in text, (lang, kind, text)


def test_every_attack_addresses_an_ai_reader_or_breaks_out_of_its_context():
    """An instruction alone ("reply with OK") could be meant for a person; each attack carries an
    addressee, an opener or a context break."""
    rng = random.Random(1)
    for lang in steering.LANGUAGES:
        shared = phrases.LANGUAGES[lang]
        marks = (*shared.addressees, *shared.openers, *steering.BREAKS)
        for kind in steering.KINDS:
            for _ in range(30):
                text = steering.attack(rng, lang, kind)
                assert any(mark in text for mark in marks), (lang, kind, text)


def test_records_are_deterministic_harmful_and_grouped_by_family_and_language():
    records = steering.steering_records([FILLER])
    assert records == steering.steering_records([FILLER])
    assert records != steering.steering_records([FILLER], seed=1)
    groups = Counter(r["group"] for r in records)
    assert set(groups) == {f"steer:{k}:{lang}" for k in steering.KINDS for lang in steering.LANGUAGES}
    assert set(groups.values()) == {steering.PER_KIND}
    assert {r["label"] for r in records} == {"harmful"}
    assert {r["how"].split(" in ")[-1] for r in records} == set(steering.ATTACK_CARRIERS)
    assert {r["split"] for r in records} == {"train"}
    assert {r["policy"] for r in records} == {"prompt-injection"}


def test_the_command_writes_the_records_and_counts_them_in_the_manifest(built_corpus):
    out = built_corpus
    write_steering(out)
    records = _records(out / steering.FILE_NAME)
    assert records and all("not a filler" not in r["text"] for r in records)
    counted = json.loads((out / "MANIFEST.json").read_text(encoding="utf-8"))["steering"]["counts"]
    assert counted == {"harmful": len(records), "harmless": 0}


def test_the_committed_steering_records_are_the_generators_and_are_trained_on():
    """The committed file is what the command writes from the committed corpus's README slices,
    and part of the prompt-injection extra corpus."""
    records = _records(STEERING_FILE)
    fillers = _readme_fillers(STEERING_FILE.parent)
    assert records == steering.steering_records(fillers)
    manifest = json.loads((STEERING_FILE.parent / "MANIFEST.json").read_text(encoding="utf-8"))
    assert sum(manifest["steering"]["counts"].values()) == len(records)
    assert set(extra_corpus("prompt-injection").ids) >= {r["id"] for r in records}
