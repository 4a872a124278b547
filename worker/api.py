"""The Python API: ``scan`` (the whole gate, in-process) and ``precheck`` (the cheap first step)."""

from __future__ import annotations

from policies import load_policy
from worker.core.models import PrecheckResult, Report


def _as_bytes(content: str | bytes) -> bytes:
    return content.encode("utf-8") if isinstance(content, str) else bytes(content)


def _library_logging() -> None:
    """Used as a library, the gate's events go to the standard ``logging`` module (quiet at its
    default WARNING level, configurable by the host) unless the host configured structlog itself;
    structlog's own default would print every decision on stdout."""
    import structlog

    if not structlog.is_configured():
        from worker.logs import configure_logging

        configure_logging(stdlib=True)


def scan(content: str | bytes, policy: str = "prompt-injection") -> Report:
    """Gate ``content`` under ``policy`` with the embedded default and return its report."""
    from worker.tasks.embedded import default_gate

    _library_logging()
    submitted = default_gate().submit(_as_bytes(content), [policy], source="api")
    gate = submitted.gates[0]
    if gate.report is None:
        raise RuntimeError(f"gate {gate.id} is still {gate.status}")
    return Report.model_validate_json(gate.report)


def precheck(content: str | bytes, policy: str) -> PrecheckResult:
    """Run only the policy's pre-check (the same code the worker runs)."""
    from worker.core.precheck import run_precheck

    return run_precheck(_as_bytes(content), load_policy(policy))
