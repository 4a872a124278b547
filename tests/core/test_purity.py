"""worker/core stays pure: no broker, database, object-store or HTTP client imports."""

from __future__ import annotations

import ast
from pathlib import Path

CORE = Path(__file__).resolve().parents[2] / "worker" / "core"
FORBIDDEN = {"celery", "redis", "kombu", "boto3", "botocore", "httpx", "sqlmodel", "sqlalchemy", "requests"}


def imported_roots(path: Path) -> set[str]:
    roots: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            roots.add(node.module.split(".")[0])
            if node.module.startswith("worker.") and not node.module.startswith("worker.core"):
                roots.add("worker-shell")
    return roots


def test_core_imports_no_io_libraries():
    """No module under worker/core imports celery, redis, kombu, boto3, httpx or sqlmodel."""
    files = sorted(CORE.rglob("*.py"))
    assert files
    offenders = {f.name: sorted(imported_roots(f) & (FORBIDDEN | {"worker-shell"})) for f in files}
    assert {k: v for k, v in offenders.items() if v} == {}
