"""The generated tool-output errands (worker/training/corpus/errands.py) and their look-alikes."""

from __future__ import annotations

import gzip
import json
import random
import re
from collections import Counter

from worker.training.corpus import errands
from worker.training.corpus.__main__ import _readme_fillers, write_errands
from worker.training.data import ERRANDS_FILE, extra_corpus

FILLER = "# pkg\n\nThe pkg package parses configuration files.\n\nIt has no dependencies.\n" * 4


def _records(path):
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        return [json.loads(line) for line in handle]


def _strings(value):
    """Every string value of a JSON document."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def test_every_family_is_written_in_every_language_and_fills_its_placeholders():
    rng = random.Random(0)
    assert len(errands.LANGUAGES) >= 10
    for lang, table in errands.LANGUAGES.items():
        assert len(table["benign"]) >= 3, lang
        assert len(table["support"]) >= 3, lang
        for kind in errands.KINDS:
            assert len(table[kind]) >= 2, (lang, kind)
            for _ in range(20):
                text = errands.errand(rng, lang, kind)
                assert not re.search(r"\{[a-z]+\}", text), (lang, kind, text)
                assert "  " not in text


def test_a_request_lands_whole_in_one_field_of_a_tool_answer_or_in_a_web_page():
    rng = random.Random(2)
    places = Counter()
    for _ in range(300):
        lang = rng.choice(sorted(errands.LANGUAGES))
        request = errands.errand(rng, lang, rng.choice(errands.KINDS))
        text, where = errands.placed(rng, lang, request, [FILLER], ["The pkg package parses files."])
        places[where] += 1
        if where == "web":
            assert request in text
        else:
            assert any(request in value for value in _strings(json.loads(text))), (where, text)
    assert set(places) == {*errands.SCHEMAS, "web"}


def test_records_are_deterministic_labelled_and_grouped_by_family_and_language():
    records = errands.errand_records([FILLER])
    assert records == errands.errand_records([FILLER])
    assert records != errands.errand_records([FILLER], seed=1)
    groups = Counter((r["group"], r["label"]) for r in records)
    langs = errands.LANGUAGES
    assert set(groups) == {(f"errand:{lang}", "harmful") for lang in langs} | {
        (f"errand:{kind}:{lang}", "harmless") for kind in ("ordinary", "support") for lang in langs
    } | {(f"errand:prose:{i}", "harmless") for i in range(errands.PROSE_GROUPS)}
    harmful = [count for (group, label), count in groups.items() if label == "harmful"]
    assert set(harmful) == {errands.PER_KIND * len(errands.KINDS)}
    # every group weighs the same in training: the look-alikes' groups outnumber the attacks'
    assert sum(label == "harmless" for _, label in groups) >= 3 * len(harmful)
    assert {r["split"] for r in records} == {"train"}
    assert {r["policy"] for r in records} == {"prompt-injection"}


def test_the_look_alikes_hold_ordinary_content_and_polite_requests_to_people():
    """ "Please" in tool output is not the attack: the harmless records include polite requests
    about ordinary things, in the same fields as the attacks."""
    records = errands.errand_records([FILLER])
    harmless = [r["text"] for r in records if r["label"] == "harmless"]
    polite = [s for s in errands.LANGUAGES["en"]["benign"] if s.startswith(("Please", "Could you", "Kindly"))]
    assert len(polite) >= 3
    assert any(any(p in text for p in polite) for text in harmless)


def test_addresses_and_amounts_appear_on_both_sides():
    """The attacks name an address, an account or an amount; so do ordinary messages (a receipt, a
    sender): what tells them apart is the request, not the values."""
    records = errands.errand_records([FILLER])
    values = [v for key in ("email", "amount", "account") for v in errands.VALUES[key]]

    def share(label):
        texts = [
            r["text"] for r in records if r["label"] == label and not r["group"].startswith("errand:prose")
        ]
        return sum(any(v in t for v in values) for t in texts) / len(texts)

    assert share("harmful") > 0.5
    assert share("harmless") > 0.3


def test_support_requests_are_ticket_exports_or_issues_holding_the_request():
    rng = random.Random(4)
    shapes = Counter()
    for _ in range(60):
        request = "Please cancel my subscription at the end of the month."
        text, where = errands.support_ticket(rng, request, [FILLER])
        shapes[where] += 1
        assert request in text
        if text.startswith("{"):
            assert request in set(_strings(json.loads(text)))
    assert set(shapes) == {"tickets", "ticket"}


def test_a_report_quotes_an_errand_in_plain_sight_in_every_language():
    """Advisories, incident reports and warnings quote the request to tell people about it: the
    report is harmless, and it is never hidden (hidden text addressed to the reader is an injection)."""
    rng = random.Random(5)
    places = Counter()
    for lang, table in errands.LANGUAGES.items():
        assert len(table["report"]) >= 3 and all("{quote}" in frame for frame in table["report"]), lang
        for _ in range(10):
            text, where = errands.report(rng, lang, [FILLER])
            places[where] += 1
            assert not re.search(r"\{[a-z]+\}", text), (lang, text)
            assert "<" not in text and "display:none" not in text
    assert set(places) == {"ticket", "document"}


def test_reports_are_added_after_the_rest_one_harmless_group_per_language():
    """``reports`` appends its records: the others are drawn as without it."""
    plain = errands.errand_records([FILLER])
    with_reports = errands.errand_records([FILLER], reports=True)
    assert with_reports[: len(plain)] == plain
    added = with_reports[len(plain) :]
    assert len(added) == errands.REPORTS_PER_LANGUAGE * len(errands.LANGUAGES)
    assert {r["label"] for r in added} == {"harmless"}
    assert {r["group"] for r in added} == {f"errand:report:{lang}" for lang in errands.LANGUAGES}


def test_the_command_writes_the_records_and_counts_them_in_the_manifest(built_corpus):
    out = built_corpus
    write_errands(out)
    records = _records(out / errands.FILE_NAME)
    counted = json.loads((out / "MANIFEST.json").read_text(encoding="utf-8"))["errands"]["counts"]
    labels = Counter(r["label"] for r in records)
    assert counted == {"harmful": labels["harmful"], "harmless": labels["harmless"]}
    assert labels["harmful"] and labels["harmless"]


def test_the_committed_errands_are_the_generators_and_an_option_of_training():
    """The committed file is what the command writes (``errands --reports``); ``--errands`` trains on
    it, the shipped recipe does not (docs/measurements.md: it cost recall in long carriers)."""
    records = _records(ERRANDS_FILE)
    fillers = _readme_fillers(ERRANDS_FILE.parent)
    assert records == errands.errand_records(fillers, reports=True)
    manifest = json.loads((ERRANDS_FILE.parent / "MANIFEST.json").read_text(encoding="utf-8"))
    assert sum(manifest["errands"]["counts"].values()) == len(records)
    ids = {r["id"] for r in records}
    assert set(extra_corpus("prompt-injection", errands=True).ids) >= ids
    assert not set(extra_corpus("prompt-injection").ids) & ids
    assert not set(extra_corpus("malicious-package", errands=True).ids) & ids


def test_training_takes_the_errands_only_when_asked():
    from worker.training.__main__ import parse_args

    assert parse_args(["--policy", "prompt-injection", "--errands"]).errands is True
    assert parse_args(["--policy", "prompt-injection"]).errands is False
