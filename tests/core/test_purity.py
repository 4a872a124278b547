"""The layering the folders draw holds: a pure core, and celery only in the Celery layer."""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CORE = ROOT / "worker" / "core"
PRODUCT = ("worker", "producers", "policies")
CELERY_LAYER = ROOT / "worker" / "tasks"
# What worker/core may import besides itself and the standard library. ``hyperscan`` is the
# optional regex accelerator of :mod:`worker.core.literals` and :mod:`worker.core.matcher`: a
# pure in-memory matcher (no I/O), imported only when installed, with a pure-Python fallback
# that gives the same answers; it is the one third-party import that is not a value library.
CORE_MAY_IMPORT = frozenset({"pydantic", "numpy", "hyperscan"})
# Calls that reach the file system: ``open(...)``, ``Path(...).read_bytes()``, ``os.stat(...)``...
FILE_CALLS = frozenset(
    {"open", "fdopen", "read_text", "read_bytes", "write_text", "write_bytes", "iterdir", "glob", "rglob"}
)
FILE_MODULES = frozenset({"os", "io", "shutil", "glob", "tempfile", "resources"})  # any call of these


def python_files(*folders: str | Path) -> list[Path]:
    return sorted(f for folder in folders for f in (ROOT / folder).rglob("*.py"))


def imported_modules(tree: ast.AST) -> Iterator[str]:
    """Every absolute module name the code imports, ``importlib.import_module("x")`` included."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.module
        elif (
            isinstance(node, ast.Call)
            and _called_name(node) in ("import_module", "__import__")
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            yield node.args[0].value


def _called_name(node: ast.Call) -> str | None:
    if isinstance(node.func, ast.Name):
        return node.func.id
    if isinstance(node.func, ast.Attribute):
        return node.func.attr
    return None


def _touches_files(node: ast.Call) -> bool:
    func = node.func
    receiver = func.value if isinstance(func, ast.Attribute) else None
    if isinstance(receiver, ast.Attribute):  # os.path.getsize(...)
        receiver = receiver.value
    return _called_name(node) in FILE_CALLS or (
        isinstance(receiver, ast.Name) and receiver.id in FILE_MODULES
    )


def parse(path: Path) -> ast.AST:
    return ast.parse(path.read_text(), filename=str(path))


def test_core_imports_only_itself_the_standard_library_pydantic_and_numpy():
    """worker/core imports only itself, the standard library, pydantic, numpy and optional hyperscan."""
    files = python_files(CORE)
    assert len(files) > 10
    offenders = {}
    for path in files:
        outside = {
            name
            for name in imported_modules(parse(path))
            if not name.startswith("worker.core")
            and name.split(".")[0] not in sys.stdlib_module_names | CORE_MAY_IMPORT
        }
        if outside:
            offenders[str(path.relative_to(ROOT))] = sorted(outside)
    assert offenders == {}


def test_core_opens_no_file():
    """No code under worker/core opens, reads, lists or stats a file: the loader hands it data."""
    offenders = [
        f"{path.relative_to(ROOT)}:{node.lineno} {_called_name(node)}()"
        for path in python_files(CORE)
        for node in ast.walk(parse(path))
        if isinstance(node, ast.Call) and _touches_files(node)
    ]
    assert offenders == []


def test_the_purity_checks_see_a_file_read_and_a_foreign_import():
    """The purity checks flag a dynamic import, Path.read_bytes and os.path.getsize, not message.walk()."""
    tree = ast.parse("importlib.import_module('redis')\nPath('x').read_bytes()\nos.path.getsize(p)\nm.walk()")
    assert "redis" in set(imported_modules(tree))
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and _called_name(n) != "Path"]
    assert [_called_name(n) for n in calls if _touches_files(n)] == ["read_bytes", "getsize"]


def celery_importers() -> set[str]:
    return {
        str(path.relative_to(ROOT))
        for path in python_files(*PRODUCT)
        if not path.is_relative_to(CELERY_LAYER)
        and any(name.split(".")[0] == "celery" for name in imported_modules(parse(path)))
    }


def test_only_the_celery_layer_imports_celery():
    """Outside worker/tasks no product module imports celery."""
    assert celery_importers() == set()


ADAPTERS = ROOT / "worker" / "adapters"
# The database and S3 client libraries: only the I/O adapters speak them (all SQL lives in the
# repositories under worker/adapters/db; their errors are translated there).
ADAPTER_ONLY = frozenset({"sqlalchemy", "sqlmodel", "botocore", "boto3"})


def adapter_library_importers() -> dict[str, list[str]]:
    found = {}
    for path in python_files(*PRODUCT):
        if path.is_relative_to(ADAPTERS):
            continue
        names = sorted({n.split(".")[0] for n in imported_modules(parse(path))} & ADAPTER_ONLY)
        if names:
            found[str(path.relative_to(ROOT))] = names
    return found


def test_only_the_adapters_import_the_database_and_s3_libraries():
    """Outside worker/adapters no product module imports sqlalchemy, sqlmodel, botocore or boto3."""
    assert adapter_library_importers() == {}
