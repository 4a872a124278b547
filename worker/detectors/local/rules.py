"""The ``rules`` detector: the pre-check's engine, voting at a lower threshold.

The pre-check blocks alone, so it only fires on decisive evidence (score >=
``block_score``). As one voter of the local ensemble this detector may be more
sensitive: it sums the same rule weights (weak structural signals included) and
votes ``harmful`` from ``threshold`` on, by default half the policy's block
score. It scans every byte, so its coverage is always complete. Its vote names where the
rules hit (the evidence spans of the stretch that scored, heaviest first) as windows of the raw
bytes, each with its rule's weight as logit and score: where the quorum's ``colocate_bytes``
looks for the passage the votes agree on.
"""

from __future__ import annotations

from typing import Any

from policies.loader import load_ruleset, resolve_rulesets
from worker.core.detector import Artifact, verdict_output
from worker.core.errors import ConfigError
from worker.core.models import Answer, Coverage, ScoredWindow, Verdict
from worker.core.policy import HarmPolicy
from worker.core.precheck import scan_rules

DEFAULT_RATIO = 0.5  # vote harmful from this fraction of the policy's block_score


class RulesDetector:
    """Votes with the policy's rulesets (or ``rulesets``) summed against ``threshold``.

    Options: ``threshold`` (absolute score; default ``DEFAULT_RATIO`` x the
    policy's ``block_score``), ``rulesets`` (names overriding the policy's).
    """

    backend = "rules"

    def __init__(
        self,
        name: str = "rules",
        threshold: float | None = None,
        rulesets: list[str] | tuple[str, ...] | None = None,
        **options: Any,
    ) -> None:
        if options:
            raise ConfigError(f"rules detector {name!r}: unknown options {sorted(options)}")
        if threshold is not None and threshold <= 0:
            raise ConfigError(f"rules detector {name!r}: threshold must be positive")
        self.name = name
        self.threshold = threshold
        self.rulesets = tuple(rulesets) if rulesets else None
        for ruleset in self.rulesets or ():
            load_ruleset(ruleset)  # fail at start-up, not on the first artifact

    def threshold_for(self, policy: HarmPolicy) -> float:
        """The score from which this detector votes harmful under ``policy``."""
        if self.threshold is not None:
            return self.threshold
        return DEFAULT_RATIO * policy.precheck.block_score

    def answer(self, artifact: Artifact, policy: HarmPolicy) -> Answer:
        names = self.rulesets or policy.precheck.rulesets
        if not names:
            raise ConfigError(f"policy {policy.id!r} names no rulesets for the rules detector")
        scan = scan_rules(artifact.data, resolve_rulesets(policy, names), policy.precheck.locality_bytes)
        verdict: Verdict = "harmful" if scan.score >= self.threshold_for(policy) else "harmless"
        places = tuple(
            ScoredWindow(view="raw", start=e.span.start, end=e.span.end, logit=e.weight, score=e.weight)
            for e in sorted(scan.evidence.values(), key=lambda e: (-e.weight, e.span.start, e.rule_id))
        )
        return Answer(
            output=verdict_output(verdict),
            coverage=Coverage.full(artifact.size),
            score=scan.score,
            windows=places,
        )
