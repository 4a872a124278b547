"""Shipped policies validate against HarmPolicy; the schema refuses unsafe configurations."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from policies import HarmPolicy, available_policies, load_policy


def test_both_policies_ship_and_validate():
    """prompt-injection and malicious-package load with a 2-of-3 fail-closed quorum."""
    assert {"prompt-injection", "malicious-package"} <= set(available_policies())
    for pid in ("prompt-injection", "malicious-package"):
        policy = load_policy(pid)
        assert policy.id == pid and len(policy.sha256) == 64
        assert policy.protocol.fail_closed is True and policy.protocol.allowed == ("harmful", "harmless")
        assert policy.quorum.required == 2 and len(policy.quorum.detectors) == 3


BASE = {
    "id": "x",
    "version": "1",
    "harm_definition": "d",
    "input_description": "i",
    "quorum": {
        "required": 2,
        "detectors": [{"name": "a", "kind": "static"}, {"name": "b", "kind": "static"}],
    },
}


def test_fail_open_protocol_is_rejected():
    """A policy cannot turn fail_closed off."""
    with pytest.raises(ValidationError):
        HarmPolicy.model_validate({**BASE, "protocol": {"fail_closed": False}})


def test_quorum_larger_than_detectors_is_rejected():
    """required may not exceed the number of detectors."""
    with pytest.raises(ValidationError):
        HarmPolicy.model_validate({**BASE, "quorum": {**BASE["quorum"], "required": 3}})


def test_duplicate_detector_names_are_rejected():
    """Each detector votes once, so names are unique."""
    dup = {"required": 1, "detectors": [{"name": "a", "kind": "static"}, {"name": "a", "kind": "static"}]}
    with pytest.raises(ValidationError):
        HarmPolicy.model_validate({**BASE, "quorum": dup})


def test_unknown_fields_are_rejected():
    """A typo in a policy is an error, not a silently ignored key."""
    with pytest.raises(ValidationError):
        HarmPolicy.model_validate({**BASE, "quorom": {}})


SPLIT = (
    "id: edited\nversion: '{version}'\nharm_definition: d\ninput_description: i\n"
    "precheck: {{rulesets: [{rulesets}]}}\nquorum:\n  required: 2\n  detectors:\n"
    "    - {{name: a, kind: static}}\n    - {{name: b, kind: static}}\n"
)


def test_an_edited_policy_takes_effect_without_a_restart(tmp_path):
    """load_policy answers with the file as it is now: an edit (even one of the same size,
    written at once) gives the new content and a new fingerprint; an unchanged file gives the
    very same object, so caches keyed on it stay warm."""
    path = tmp_path / "edited.yaml"
    path.write_text(SPLIT.format(version="1", rulesets=""))
    first = load_policy(str(path))
    assert load_policy(str(path)) is first
    path.write_text(SPLIT.format(version="2", rulesets=""))  # same size, same timestamp tick
    second = load_policy(str(path))
    assert (first.version, second.version) == ("1", "2")
    assert second.sha256 != first.sha256


def test_the_fingerprint_covers_the_rule_files_it_names(tmp_path, monkeypatch):
    """Two policies with the same YAML but different rule files have different fingerprints,
    and a scan with rules edited after the policy was loaded refuses to run (so a gate's
    recorded fingerprint always names the rules that judged it)."""
    from policies import loader
    from worker.core.errors import ConfigError
    from worker.core.precheck import run_precheck

    monkeypatch.setattr(loader, "RULES_DIR", str(tmp_path))
    rule = "id: animals\nversion: '1'\nrules:\n  - {{id: t.zebra, pattern: '{word}', weight: 1.0, description: an animal}}\n"
    (tmp_path / "animals.yaml").write_text(rule.format(word="zebra"))
    path = tmp_path / "edited.yaml"
    path.write_text(SPLIT.format(version="1", rulesets="animals"))
    before = load_policy(str(path))
    assert run_precheck(b"a zebra crossed", before).verdict == "harmful"

    (tmp_path / "animals.yaml").write_text(rule.format(word="tiger"))
    with pytest.raises(ConfigError, match="changed since its policy was loaded"):
        run_precheck(b"a zebra crossed", before)
    after = load_policy(str(path))
    assert after.sha256 != before.sha256
    assert run_precheck(b"a zebra crossed", after).verdict == "harmless"
    assert run_precheck(b"a tiger crossed", after).verdict == "harmful"


def test_a_policy_naming_a_missing_rule_file_does_not_load(tmp_path):
    """A ruleset the policy names but nobody can read is a PolicyError at load, not a gate
    that runs with fewer rules."""
    from policies import PolicyError

    path = tmp_path / "edited.yaml"
    path.write_text(SPLIT.format(version="1", rulesets="no-such-ruleset"))
    with pytest.raises(PolicyError, match="no-such-ruleset"):
        load_policy(str(path))
