"""``canary eval``: run labelled records through the full gate and score each detector setup.

    canary eval --policy ID [--detectors SETUP]... [--json] [--limit N] FILE.jsonl[.gz]...

Every record goes through exactly the production code path (intake, pre-check
task, chord of detect tasks, quorum callback, routing) with an
:class:`~worker.tasks.embedded.EmbeddedGate` on a throw-away temp folder: never the
user's ``.canary``, database, broker or buckets. Each setup gets its own folder,
so nothing is deduplicated across setups. The command itself is ``worker.cli.ops.eval_command``.

Module imports stay light (stdlib); the gate, rich and the detectors load only when the
command runs.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from worker.adapters.db import Gate
    from worker.evaluation.inputs import Record, Setup
    from worker.evaluation.scores import Outcome, SetupScore
    from worker.settings import Settings

WARM_UP = b"canary eval warm-up: a short plain note about lunch on Friday.\n"


def isolated_settings(folder: Path) -> Settings:
    """Embedded settings on ``folder`` only: whatever CANARY_* says about services is ignored."""
    from worker.settings import Settings

    return Settings.load(
        data_dir=folder,
        broker_url=None,
        result_backend=None,
        database_url=None,
        s3_endpoint_url=None,
        object_store="local",
        metrics_port=0,
    )


def _outcome(gate: Gate, record: Record, created: bool) -> Outcome:
    from worker.evaluation.scores import outcome_from_report

    report = json.loads(gate.report) if gate.report else None
    return outcome_from_report(record.id, record.label, record.source, gate.status, report, created)


def run_setup(
    setup: Setup, records: Sequence[Record], folder: Path, advance: Callable[[], None] = lambda: None
) -> SetupScore:
    """Gate every record under ``setup`` in a fresh embedded gate on ``folder``; score the outcomes."""
    from worker.evaluation.scores import Outcome, SetupScore
    from worker.tasks.embedded import EmbeddedGate

    gate = EmbeddedGate(isolated_settings(folder))
    score = SetupScore(setup.label, setup.policy.id, setup.policy.version, setup.detectors, setup.required)
    try:
        gate.submit(WARM_UP, [setup.policy_ref], source="eval:warm-up")  # load models before timing
        for record in records:
            try:
                submitted = gate.submit(record.data, [setup.policy_ref], source=record.source)
            except Exception:  # noqa: BLE001 - a crashed gate fails closed (the sweeper sends it to review)
                score.outcomes.append(
                    Outcome(record.id, record.label, "review", record.source, gate_error=True)
                )
            else:
                score.outcomes.append(_outcome(submitted.gates[0], record, submitted.created[0]))
            advance()
    finally:
        gate.rt.repo.engine.dispose()
    return score


def evaluate(
    policy: str,
    setups: Sequence[str | None],
    paths: Sequence[str],
    limit: int | None = None,
    progress: bool = False,
) -> list[SetupScore]:
    """Resolve the setups, read the records, and score each setup. Raises :class:`EvalInputError`."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    from worker.evaluation.inputs import EvalInputError, read_records, resolve_setup

    with tempfile.TemporaryDirectory(prefix="canary-eval-") as tmp:
        root = Path(tmp)
        base = resolve_setup(None, policy, root / "policies")
        resolved = [resolve_setup(text, policy, root / "policies") for text in setups]
        records, skipped = read_records(paths, base.policy.id, limit)
        if not records:
            raise EvalInputError(f"no records for policy {base.policy.id} in {', '.join(paths)}")
        err = Console(stderr=True)
        columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
        scores: list[SetupScore] = []
        with Progress(
            *columns, console=err, transient=True, disable=not (progress and err.is_terminal)
        ) as bar:
            for index, setup in enumerate(resolved):
                task = bar.add_task(setup.label, total=len(records))
                score = run_setup(setup, records, root / f"setup-{index}", partial(bar.advance, task))
                score.skipped = skipped
                scores.append(score)
        return scores
