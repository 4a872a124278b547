"""Versioned harm policies, their schema and loader."""

from policies.loader import PolicyError, available_policies, load_policy
from policies.schema import DetectorSpec, HarmPolicy, PrecheckConfig, Protocol, Quorum

__all__ = [
    "DetectorSpec",
    "HarmPolicy",
    "PolicyError",
    "PrecheckConfig",
    "Protocol",
    "Quorum",
    "available_policies",
    "load_policy",
]
