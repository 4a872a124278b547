"""Load versioned YAML policies from this package (or a path) and fingerprint them."""

from __future__ import annotations

import hashlib
from functools import lru_cache
from pathlib import Path

import yaml

from policies.schema import HarmPolicy

POLICY_DIR = Path(__file__).resolve().parent


class PolicyError(Exception):
    """A policy could not be found or does not validate."""


def available_policies() -> list[str]:
    """Ids of the policies shipped in ``policies/``."""
    return sorted(p.stem for p in POLICY_DIR.glob("*.yaml"))


def policy_path(policy: str) -> Path:
    candidate = Path(policy)
    if candidate.suffix in {".yaml", ".yml"} and candidate.is_file():
        return candidate
    path = POLICY_DIR / f"{policy}.yaml"
    if not path.is_file():
        raise PolicyError(f"unknown policy {policy!r}; shipped: {', '.join(available_policies())}")
    return path


@lru_cache(maxsize=64)
def load_policy(policy: str) -> HarmPolicy:
    """Load and validate a policy by id (``prompt-injection``) or YAML path."""
    path = policy_path(policy)
    raw = path.read_bytes()
    try:
        data = yaml.safe_load(raw)
        data["sha256"] = hashlib.sha256(raw).hexdigest()
        return HarmPolicy.model_validate(data)
    except (yaml.YAMLError, TypeError, ValueError) as exc:
        raise PolicyError(f"policy {path.name} is invalid: {exc}") from exc
