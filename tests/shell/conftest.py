"""Shell tests run the real task graph in-process (eager) on SQLite and temp folders."""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.fixtures.registry import Registry, serving
from worker.cli import app
from worker.settings import Settings
from worker.tasks.embedded import EmbeddedGate

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "policies"


@pytest.fixture()
def gate(tmp_path: Path) -> EmbeddedGate:
    """An embedded gate with its own data folder."""
    return EmbeddedGate(Settings(data_dir=tmp_path / "canary"))


@pytest.fixture()
def fixture_policy():
    """Path of a test policy in tests/fixtures/policies."""
    return lambda name: str(FIXTURES / f"{name}.yaml")


@pytest.fixture()
def served(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Registry, str]]:
    """A PyPI simple index and an npm registry on loopback, configured as the registries to use."""
    reg = Registry()
    with serving(reg) as base:
        monkeypatch.setenv("CANARY_PYPI_INDEX_URL", f"{base}/simple")
        monkeypatch.setenv("CANARY_NPM_REGISTRY", base)
        yield reg, base


@pytest.fixture()
def run(tmp_path, monkeypatch):
    """Invoke the CLI with an isolated embedded data folder."""
    monkeypatch.setenv("CANARY_DATA_DIR", str(tmp_path / "data"))
    for var in ("CANARY_BROKER_URL", "CANARY_DATABASE_URL", "CANARY_S3_ENDPOINT_URL"):
        monkeypatch.delenv(var, raising=False)
    runner = CliRunner()
    return lambda *args: runner.invoke(app, list(args))


CORPUS_FILLER = "# pkg\n\nThe pkg package parses configuration files.\n\nIt has no dependencies.\n" * 4


@pytest.fixture()
def built_corpus(tmp_path: Path) -> Path:
    """A data folder as ``corpus build`` leaves it, in miniature: one README slice (``CORPUS_FILLER``)
    and one record that is no filler ("not a filler"), and a manifest with no extra files yet."""
    out = tmp_path / "data"
    out.mkdir()
    readme = {"id": "extra:readme:0", "text": CORPUS_FILLER, "label": "harmless"}
    attack = {"id": "extra:attack:0", "text": "not a filler", "label": "harmful"}
    with gzip.open(out / "prompt-injection.jsonl.gz", "wt", encoding="utf-8") as handle:
        handle.write(json.dumps(readme) + "\n" + json.dumps(attack) + "\n")
    (out / "MANIFEST.json").write_text(json.dumps({"counts": {}}), encoding="utf-8")
    return out
