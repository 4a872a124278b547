"""The ``HarmPolicy`` schema: what "harmful" means, and how detectors must answer.

A policy is data: :mod:`policies.loader` reads its YAML and every rule file it names, and pins
each rule file's parsed content (a :class:`RulesetSource`) on the policy it returns, so the
pre-check compiles exactly the rules the policy's fingerprint covers and reads no file itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator, model_validator


@dataclass(frozen=True, eq=False)
class RulesetSource:
    """One rule file as the loader read it: its name, the sha256 of its bytes, its parsed YAML."""

    name: str
    sha256: str
    document: Any


class _Strict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Protocol(_Strict):
    """The tiny strict answer protocol: ``{"verdict": "harmful"|"harmless"}``."""

    field: Literal["verdict"] = "verdict"
    allowed: tuple[Literal["harmful"], Literal["harmless"]] = ("harmful", "harmless")
    fail_closed: Literal[True] = True


class PrecheckConfig(_Strict):
    """Cheap pre-check: which rule sets run, and the score that blocks early."""

    signals: tuple[str, ...] = ()
    rulesets: tuple[str, ...] = ()
    block_score: float = Field(default=1.0, gt=0)
    # Only hits within one stretch of this many bytes add up (None: the whole artifact). An
    # injection is one passage; weak hits scattered over megabytes of code are not.
    locality_bytes: int | None = Field(default=None, ge=4096)


class DetectorSpec(_Strict):
    """One detector of the quorum.

    ``kind`` picks the implementation (``rules``, ``lexical``, ``semantic``,
    ``openai``, ``anthropic``, ``ollama``, ``canary-probe``, ``static``);
    ``options`` is passed to it verbatim.
    """

    name: str
    kind: str
    timeout_s: float = Field(default=30.0, gt=0)
    # Local detectors read every byte, so their time grows with the artifact: the budget of one
    # vote is ``timeout_s`` plus this much per MB (a fixed budget would send every large benign
    # release to review on a busy machine). 0: a fixed budget.
    timeout_per_mb_s: float = Field(default=0.0, ge=0)
    options: dict[str, Any] = Field(default_factory=dict)

    def budget_s(self, size: int) -> float:
        """Seconds one vote on an artifact of ``size`` bytes may take before it is a timeout."""
        return self.timeout_s + self.timeout_per_mb_s * size / 1e6


# Detector kinds whose votes carry a score (their own confidence); LLM backends answer only the
# strict protocol, so there is nothing for a dissent threshold to read.
SCORED_KINDS = frozenset({"rules", "lexical", "semantic"})


class ShortDissent(_Strict):
    """Dissent scores for texts of at most ``up_to_bytes``, in place of ``Quorum.dissent``'s for
    the detectors named. A model's best window is the best of more windows in a longer text, so
    its false alarms, and what a confident lone vote costs in reviews, grow with length: a policy
    may give several such tiers, a higher bar for each longer one."""

    up_to_bytes: int = Field(ge=1)
    scores: dict[str, float]


class SecondedDissent(_Strict):
    """A lone harmful vote that another detector seconds goes to review instead of being allowed:
    the vote reaches its detector's ``scores`` value and names a place (a window it scored at least
    that high) where another detector, voting harmless, still names one of its best places with at
    least its ``seconds`` value, within the quorum's ``colocate_bytes``. Two detectors point at one
    passage though only one crossed its cut. Texts of at most ``up_to_bytes`` (None: any length).
    The windows a vote names carry their scores (a model's best three; the rules' evidence)."""

    scores: dict[str, float]
    seconds: dict[str, float]
    up_to_bytes: int | None = Field(default=None, ge=1)


class Quorum(_Strict):
    """``required`` valid votes of ``detectors`` decide.

    ``dissent`` maps a detector name to a score: when that detector votes harmful with at
    least that score but the others outvote it, the item goes to review instead of being
    allowed. Each detector's score is its own scale (rules: summed rule weights; lexical and
    semantic: a probability), so each gets its own threshold. ``dissent_short`` sets other
    scores for texts up to a length (the dissenting vote's coverage: the bytes it read): one tier
    or a list of them, the shortest that holds the text and names the detector applies.

    ``colocate_bytes``: harmful votes add up only where they point at one passage (places at
    most that many bytes apart); None, the default: anywhere in the artifact
    (:func:`worker.core.quorum.decide_quorum`). ``dissent_seconded``: a lone harmful vote that
    another detector seconds on the same passage goes to review (:class:`SecondedDissent`).
    """

    detectors: tuple[DetectorSpec, ...]
    required: int = Field(default=2, ge=1)
    dissent: dict[str, float] = Field(default_factory=dict)
    dissent_short: tuple[ShortDissent, ...] = ()
    colocate_bytes: int | None = Field(default=None, ge=0)
    dissent_seconded: SecondedDissent | None = None

    @field_validator("dissent_short", mode="before")
    @classmethod
    def _tiers(cls, value: Any) -> Any:
        """One tier (a mapping) reads as a list of one; none (null) as no tier."""
        if value is None:
            return ()
        return [value] if isinstance(value, Mapping | ShortDissent) else value

    @model_validator(mode="after")
    def _check(self) -> Quorum:
        names = [d.name for d in self.detectors]
        if len(set(names)) != len(names):
            raise ValueError("detector names must be unique within a quorum")
        if self.required > len(self.detectors):
            raise ValueError("quorum.required exceeds the number of detectors")
        kinds = {d.name: d.kind for d in self.detectors}
        lengths = [tier.up_to_bytes for tier in self.dissent_short]
        if lengths != sorted(set(lengths)):
            raise ValueError(
                "quorum.dissent_short: tiers go from the shortest up_to_bytes up, each length once"
            )
        tiers = [("dissent", self.dissent)] + [("dissent_short", tier.scores) for tier in self.dissent_short]
        if self.dissent_seconded is not None:
            tiers += [
                ("dissent_seconded.scores", self.dissent_seconded.scores),
                ("dissent_seconded.seconds", self.dissent_seconded.seconds),
            ]
        for field, scores in tiers:
            for name, score in scores.items():
                if name not in kinds:
                    raise ValueError(f"quorum.{field} names {name!r}, which is not a detector of the quorum")
                if kinds[name] not in SCORED_KINDS:
                    raise ValueError(f"quorum.{field}: detector {name!r} ({kinds[name]}) records no score")
                if score <= 0:
                    raise ValueError(f"quorum.{field}: the score for {name!r} must be positive")
        return self


class ReviewRules(_Strict):
    """How people may overturn this policy's decisions (worker.pipeline.review)."""

    # Releasing a gate the pre-check quarantined on decisive evidence takes two different
    # reviewers: one requests the release, a second approves it. False: one reviewer suffices.
    two_person_release: bool = True


class HarmPolicy(_Strict):
    """A versioned harm policy (one YAML file in ``policies/``)."""

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$")
    version: str
    harm_definition: str
    input_description: str
    precheck: PrecheckConfig = PrecheckConfig()
    detector_guidance: tuple[str, ...] = ()
    protocol: Protocol = Protocol()
    quorum: Quorum
    review: ReviewRules = ReviewRules()
    sha256: str = ""
    _rulesets: dict[str, RulesetSource] = PrivateAttr(default_factory=dict)
    _models: dict[str, str] = PrivateAttr(default_factory=dict)

    def pin_rulesets(self, sources: Mapping[str, RulesetSource]) -> None:
        """Record each named rule file as loaded (its sha256 is part of ``sha256``): the rules
        every scan under this policy compiles."""
        self._rulesets = dict(sources)

    def ruleset_source(self, name: str) -> RulesetSource | None:
        """Rule file ``name`` as it was when this policy was loaded (None: not pinned)."""
        return self._rulesets.get(name)

    def ruleset_sha256(self, name: str) -> str | None:
        """The sha256 of rule file ``name`` when this policy was loaded (None: not pinned)."""
        source = self._rulesets.get(name)
        return None if source is None else source.sha256

    def pin_models(self, digests: dict[str, str]) -> None:
        """Record each model file's sha256 as loaded, by absolute path (part of ``sha256``)."""
        self._models = dict(digests)

    def model_sha256(self, path: str) -> str | None:
        """The sha256 of model file ``path`` when this policy was loaded (None: not pinned)."""
        return self._models.get(path)
