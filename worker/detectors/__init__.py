"""Detector registry: a policy's ``DetectorSpec.kind`` -> an implementation, loaded lazily.

Local families (no network): ``rules``, ``lexical``, ``semantic``. LLM backends
over httpx: ``openai``, ``anthropic``, ``ollama``, ``canary-probe``. ``static`` is
a fixed-answer detector for tests and drills.
"""

from __future__ import annotations

import importlib
from typing import Any

from worker.core.detector import Detector
from worker.core.errors import ConfigError
from worker.core.policy import DetectorSpec, HarmPolicy

KINDS: dict[str, str] = {
    "rules": "worker.detectors.local.rules:RulesDetector",
    "lexical": "worker.detectors.local.lexical:LexicalDetector",
    "semantic": "worker.detectors.local.semantic:SemanticDetector",
    "openai": "worker.detectors.llm.chat:OpenAIDetector",
    "anthropic": "worker.detectors.llm.chat:AnthropicDetector",
    "ollama": "worker.detectors.llm.chat:OllamaDetector",
    "canary-probe": "worker.detectors.llm.probe:CanaryProbeDetector",
    "static": "worker.detectors.local.static:StaticDetector",
}
NETWORK_KINDS = frozenset({"openai", "anthropic", "ollama", "canary-probe"})

_CACHE: dict[tuple[str, str], Detector] = {}


def build_detector(spec: DetectorSpec) -> Detector:
    """Instantiate the detector a spec names."""
    target = KINDS.get(spec.kind)
    if target is None:
        raise ConfigError(f"unknown detector kind {spec.kind!r}; known: {', '.join(sorted(KINDS))}")
    module_name, _, cls_name = target.partition(":")
    cls: Any = getattr(importlib.import_module(module_name), cls_name)
    options = dict(spec.options)
    if spec.kind in NETWORK_KINDS:
        options.setdefault("timeout_s", spec.timeout_s)
    detector: Detector = cls(name=spec.name, **options)
    return detector


def detector_for(policy: HarmPolicy, spec: DetectorSpec) -> Detector:
    """The per-process cached detector for ``spec`` under ``policy``."""
    key = (policy.sha256, spec.name)
    detector = _CACHE.get(key)
    if detector is None:
        detector = _CACHE[key] = build_detector(spec)
    return detector
