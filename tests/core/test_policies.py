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
