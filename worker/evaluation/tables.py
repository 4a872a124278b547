"""Rich tables for ``canary eval``: one row per setup, then per-source breakdowns and misclassified ids."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from worker.evaluation.scores import SetupScore

MISCLASSIFIED_SHOWN = 10  # per kind (FN, FP)
SETUP_COLUMNS = [
    "setup",
    "n",
    "FN",
    "FP",
    "FNR",
    "FPR",
    "accuracy",
    "review",
    "tokens",
    "cost",
    "p50_ms",
    "p95_ms",
]
SOURCE_COLUMNS = ["source", "n", "harmful", "harmless", "FN", "FP", "FNR", "FPR", "accuracy", "review"]


def _pct(value: float) -> str:
    return f"{100 * value:.1f}%"


def _ms(value: float) -> str:
    return f"{value:,.1f}"


def stdout_console() -> Console:
    """The terminal's width on a terminal; wide enough for the tables when piped."""
    console = Console()
    return console if console.is_terminal else Console(width=160)


def setups_table(summaries: Sequence[dict[str, Any]], title: str) -> Table:
    """The headline table: positive class harmful, review counted as blocked."""
    table = Table(title=title)
    for column in SETUP_COLUMNS:
        table.add_column(column.replace("_", " "), justify="left" if column == "setup" else "right")
    for s in summaries:
        table.add_row(
            Text(s["setup"]),
            str(s["n"]),
            str(s["fn"]),
            str(s["fp"]),
            _pct(s["fnr"]),
            _pct(s["fpr"]),
            _pct(s["accuracy"]),
            str(s["review"]),
            f"{s['tokens']:,}",
            f"${s['cost_usd']:.4f}",
            _ms(s["p50_ms"]),
            _ms(s["p95_ms"]),
        )
    return table


def sources_table(summary: dict[str, Any]) -> Table:
    """Per source family (the source up to its first ':') for one setup."""
    table = Table(title=Text(f"by source: {summary['setup']}"))
    for column in SOURCE_COLUMNS:
        table.add_column(column, justify="left" if column == "source" else "right")
    for name, s in summary["by_source"].items():
        table.add_row(
            Text(name),
            str(s["n"]),
            str(s["harmful"]),
            str(s["harmless"]),
            str(s["fn"]),
            str(s["fp"]),
            _pct(s["fnr"]) if s["harmful"] else "-",
            _pct(s["fpr"]) if s["harmless"] else "-",
            _pct(s["accuracy"]),
            str(s["review"]),
        )
    return table


def misclassified_lines(summary: dict[str, Any], shown: int = MISCLASSIFIED_SHOWN) -> list[str]:
    """The wrong ids, false negatives then false positives, each capped at ``shown``, with counts."""
    wrong = summary["misclassified"]
    groups = {
        "FN": [m for m in wrong if m["label"] == "harmful"],
        "FP": [m for m in wrong if m["label"] != "harmful"],
    }
    counts = ", ".join(f"{len(items)} {kind}" for kind, items in groups.items())
    lines = [f"misclassified ({summary['setup']}): {len(wrong)} of {summary['n']} ({counts})"]
    for kind, items in groups.items():
        lines.extend(f"  {kind} {m['id']} ({m['decision']})" for m in items[:shown])
        if len(items) > shown:
            lines.append(f"  ... {len(items) - shown} more {kind} (--json lists them all)")
    return lines


def print_scores(scores: Sequence[SetupScore], console: Console | None = None) -> None:
    """Everything ``canary eval`` prints without ``--json``."""
    console = console or stdout_console()
    summaries = [s.summary() for s in scores]
    first = summaries[0]
    title = f"canary eval: {first['policy']} ({first['n']} records; positive = harmful; review = blocked)"
    console.print(setups_table(summaries, title))
    for summary in summaries:
        console.print(sources_table(summary))
        for line in misclassified_lines(summary):
            console.print(line, markup=False, highlight=False)
        if summary["gate_errors"]:
            console.print(f"  gate errors (counted as review): {summary['gate_errors']}", markup=False)
