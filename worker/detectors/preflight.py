"""A policy checked whole before anything starts: detector kinds and options, rule sets compiled.

Found later, each of these would change decisions quietly: an unknown ``kind`` turns a 2-of-3
quorum into 2-of-2 (its votes are all invalid), a rule set that does not compile sends every
gate to review. ``canary scan``, ``submit`` and ``worker`` call ``check_policy`` at start and
refuse to run (one line, exit 2) on a ``ConfigError``.
"""

from __future__ import annotations

from policies import HarmPolicy
from policies.loader import named_rulesets
from worker.core.errors import ConfigError
from worker.detectors import KINDS, build_detector

_MODEL_KINDS = frozenset({"lexical", "semantic"})  # windowed local models (worker.detectors.local.windows)


def check_policy(policy: HarmPolicy) -> None:
    """Raise ``ConfigError`` naming the first thing in ``policy`` that cannot work.

    Builds each detector (cheap: models load on first use) and compiles every rule set the
    pre-check and the ``rules`` detectors read (cached in this process, so a scan reuses them).
    """
    from worker.core.ruleset import policy_rulesets
    from worker.detectors.local.windows import WindowedModelDetector  # what building a model detector imports

    where = f"policy {policy.id}"
    for spec in policy.quorum.detectors:
        if spec.kind not in KINDS:
            known = ", ".join(sorted(KINDS))
            raise ConfigError(
                f"{where}: detector {spec.name!r} has unknown kind {spec.kind!r} (known: {known})"
            )
        model = spec.kind in _MODEL_KINDS
        unknown = sorted(set(spec.options) - WindowedModelDetector.OPTIONS) if model else []
        if unknown:
            raise ConfigError(f"{where}: detector {spec.name!r} ({spec.kind}): unknown options {unknown}")
        try:
            build_detector(spec)
        except ConfigError as exc:
            raise ConfigError(f"{where}: detector {spec.name!r}: {exc}") from exc
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"{where}: detector {spec.name!r} ({spec.kind}): bad options: {exc}") from exc
    try:
        policy_rulesets(policy, named_rulesets(policy))
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}") from exc
