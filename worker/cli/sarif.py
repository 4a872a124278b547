"""``canary scan --format sarif``: the decisions as one SARIF 2.1.0 log, the format GitHub code
scanning uploads.

Only gates that held something back appear: one result per piece of evidence (a pre-check rule
hit, located by file and line; a detector that voted harmful or failed), and one for the artifact
when its gate has no evidence of either kind. A quarantine is an ``error``, a review a
``warning``; an allowed artifact has no result, so a clean scan is an empty ``results`` list.
Messages carry the gate's reason, the decision and the policy, never artifact text.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import PurePosixPath
from typing import Any
from urllib.parse import quote

from worker import __version__
from worker.core.location import Locator
from worker.core.models import Report

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
LEVELS = {"quarantine": "error", "review": "warning"}
_RANK = {"note": 0, "warning": 1, "error": 2}


def rule_descriptions(policy_ref: str) -> dict[str, str]:
    """Rule id -> description, for every rule file the policy's pre-check and rules detectors read."""
    from policies import load_policy
    from policies.loader import named_rulesets, resolve_rulesets

    policy = load_policy(policy_ref)
    compiled = resolve_rulesets(policy, named_rulesets(policy))
    return {rule.id: rule.description for ruleset in compiled for rule in ruleset.ruleset.rules}


class SarifLog:
    """Results gathered gate by gate (each artifact's bytes are looked at once, then dropped)."""

    def __init__(self, describe: Callable[[str], Mapping[str, str]] = rule_descriptions) -> None:
        self.describe = describe
        self.descriptions: dict[str, Mapping[str, str]] = {}
        self.rules: dict[str, dict[str, Any]] = {}
        self.results: list[dict[str, Any]] = []

    def add(self, name: str, data: bytes, policy_ref: str, report_json: str | None) -> None:
        """The results of one gate over the artifact ``name`` (``data`` its bytes)."""
        if not report_json:
            return
        report = Report.model_validate_json(report_json)
        level = LEVELS.get(report.decision)
        if level is None:  # allowed: nothing to show
            return
        where = _artifact_uri(name)
        props = {
            "artifact": name,
            "gate_id": report.gate_id,
            "policy": report.policy.id,
            "decision": report.decision,
        }
        message = f"{report.decision} under {report.policy.id}: {report.reason}"
        before = len(self.results)
        locator = Locator(data) if report.precheck.evidence else None
        for evidence in report.precheck.evidence:
            assert locator is not None
            spot = locator.at(evidence.span.start)
            rule = self._rule(evidence.rule_id, level, self._description(policy_ref, evidence.rule_id))
            extra = {"layer": evidence.layer, "weight": evidence.weight}
            self._add(rule, level, message, _uri(spot.path) if spot.path else where, spot.line, props | extra)
        for vote in report.votes:
            if vote.verdict == "harmless" and vote.valid:
                continue
            outcome = f"error: {vote.error}" if vote.error else str(vote.verdict)
            rule = self._rule(
                f"detector/{vote.detector}", level, f"The {vote.detector} detector ({vote.backend})."
            )
            extra = {"vote": outcome, "score": vote.score}
            self._add(rule, level, f"{message} ({vote.detector}: {outcome})", where, 1, props | extra)
        if len(self.results) == before:  # held back with no evidence of its own (a policy rule)
            rule = self._rule(f"gate/{report.decision}", level, f"The gate's decision was {report.decision}.")
            self._add(rule, level, message, where, 1, props)

    def document(self) -> dict[str, Any]:
        """The SARIF log: one run, its tool's rules (those that fired) and its results."""
        driver = {
            "name": "Canary Gate",
            "version": __version__,
            "rules": list(self.rules.values()),
        }
        return {
            "$schema": SCHEMA,
            "version": "2.1.0",
            "runs": [{"tool": {"driver": driver}, "results": self.results}],
        }

    def dumps(self) -> str:
        return json.dumps(self.document(), indent=2)

    def _add(
        self, rule_id: str, level: str, message: str, uri: str, line: int, props: dict[str, Any]
    ) -> None:
        location = {"physicalLocation": {"artifactLocation": {"uri": uri}, "region": {"startLine": line}}}
        result = {"ruleId": rule_id, "level": level, "message": {"text": message}, "locations": [location]}
        self.results.append(result | {"properties": props})

    def _description(self, policy_ref: str, rule_id: str) -> str:
        if policy_ref not in self.descriptions:
            try:
                self.descriptions[policy_ref] = self.describe(policy_ref)
            except Exception:  # a policy edited since the scan: the rule id still names the hit
                self.descriptions[policy_ref] = {}
        return self.descriptions[policy_ref].get(rule_id) or f"Pre-check rule {rule_id}."

    def _rule(self, rule_id: str, level: str, description: str) -> str:
        rule = self.rules.get(rule_id)
        if rule is None:
            rule = self.rules[rule_id] = {
                "id": rule_id,
                "shortDescription": {"text": description},
                "defaultConfiguration": {"level": level},
                "properties": {"tags": ["security"]},
            }
        elif _RANK[level] > _RANK[rule["defaultConfiguration"]["level"]]:
            rule["defaultConfiguration"]["level"] = level
        return rule_id


def _artifact_uri(name: str) -> str:
    """The scanned input as a URI reference: a member of a container (``mbox:PATH#KEY``) is its
    container's file; stdin and registry releases keep their names, percent-encoded."""
    kind, sep, rest = name.partition(":")
    if sep and kind in ("mbox", "maildir", "jsonl", "csv") and "#" in rest:
        name = rest.rpartition("#")[0]
    return _uri(name)


def _uri(path: str) -> str:
    posix = PurePosixPath(path)
    if posix.is_absolute():
        return posix.as_uri()
    return quote(str(posix), safe="/-._~")
