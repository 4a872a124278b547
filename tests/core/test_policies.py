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
    """load_policy gives an edited file's new content and fingerprint; an unchanged file, the same object."""
    # Even an edit of the same size written at once is seen; the same object keeps caches keyed on it warm.
    path = tmp_path / "edited.yaml"
    path.write_text(SPLIT.format(version="1", rulesets=""))
    first = load_policy(str(path))
    assert load_policy(str(path)) is first
    path.write_text(SPLIT.format(version="2", rulesets=""))  # same size, same timestamp tick
    second = load_policy(str(path))
    assert (first.version, second.version) == ("1", "2")
    assert second.sha256 != first.sha256


def test_the_fingerprint_covers_the_rule_files_it_names(tmp_path, monkeypatch):
    """Rule files change the fingerprint; a policy loaded before an edit scans with its own rules."""
    # So a gate's recorded fingerprint always names the rules that judged it.
    from policies import loader
    from worker.core.precheck import run_precheck

    monkeypatch.setattr(loader, "RULES_DIR", str(tmp_path))
    rule = "id: animals\nversion: '1'\nrules:\n  - {{id: t.zebra, pattern: '{word}', weight: 1.0, description: an animal}}\n"
    (tmp_path / "animals.yaml").write_text(rule.format(word="zebra"))
    path = tmp_path / "edited.yaml"
    path.write_text(SPLIT.format(version="1", rulesets="animals"))
    before = load_policy(str(path))
    assert run_precheck(b"a zebra crossed", before).verdict == "harmful"

    (tmp_path / "animals.yaml").write_text(rule.format(word="tiger"))
    assert run_precheck(b"a zebra crossed", before).verdict == "harmful"
    assert run_precheck(b"a tiger crossed", before).verdict == "harmless"
    after = load_policy(str(path))
    assert after.sha256 != before.sha256
    assert run_precheck(b"a zebra crossed", after).verdict == "harmless"
    assert run_precheck(b"a tiger crossed", after).verdict == "harmful"


def test_a_policy_naming_a_missing_rule_file_does_not_load(tmp_path):
    """A policy naming an unreadable ruleset is a PolicyError at load, not a gate with fewer rules."""
    from policies import PolicyError

    path = tmp_path / "edited.yaml"
    path.write_text(SPLIT.format(version="1", rulesets="no-such-ruleset"))
    with pytest.raises(PolicyError, match="no-such-ruleset"):
        load_policy(str(path))


def test_the_precheck_runs_on_rules_handed_to_it_as_data():
    """The pre-check scans with rules pinned on the policy as data; an unpinned ruleset is a ConfigError."""
    # No rule file exists anywhere in this test.
    from worker.core.errors import ConfigError
    from worker.core.policy import RulesetSource
    from worker.core.precheck import run_precheck, scan_policy

    policy = HarmPolicy.model_validate({**BASE, "precheck": {"rulesets": ["in-memory"]}})
    rule = {"id": "t.zebra", "pattern": "zebra", "weight": 1.0, "description": "an animal"}
    document = {"id": "in-memory", "version": "1", "rules": [rule]}
    policy.pin_rulesets({"in-memory": RulesetSource("in-memory", "0" * 64, document)})
    assert run_precheck(b"a zebra crossed", policy).verdict == "harmful"
    assert run_precheck(b"a tiger crossed", policy).verdict == "harmless"
    with pytest.raises(ConfigError, match="not loaded with ruleset 'elsewhere'"):
        scan_policy(b"a zebra crossed", policy, ["elsewhere"])


def test_a_resolver_loads_each_policy_once_and_checks_its_fingerprint(tmp_path, monkeypatch):
    """PolicyResolver loads a policy once per task and refuses a fingerprint other than the current one."""
    from policies import PolicyError, loader

    path = tmp_path / "edited.yaml"
    path.write_text(SPLIT.format(version="1", rulesets=""))
    loads: list[str] = []
    monkeypatch.setattr(loader, "load_policy", lambda ref: loads.append(ref) or load_policy(ref))
    resolver = loader.PolicyResolver()
    first = resolver.resolve(str(path))
    assert resolver.resolve(str(path), first.sha256) is first
    assert loads == [str(path)]
    with pytest.raises(
        PolicyError, match=f"changed since submission \\({'0' * 12} -> {first.sha256[:12]}\\)"
    ):
        resolver.resolve(str(path), "0" * 64)
