"""Versioned harm policies and their loader; the schema lives in :mod:`worker.core.policy`."""

from policies.loader import PolicyError, available_policies, load_policy
from worker.core.policy import DetectorSpec, HarmPolicy, PrecheckConfig, Protocol, Quorum

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
