"""What the CLI prints: the decisions table, and artifact text made safe for a terminal."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from worker.pipeline.review_windows import ShownWindow

WINDOW_SHOWN_BYTES = 1024  # of a model window's text, at most (a malicious-package window is 4 KB)


def print_table(rows: list[tuple[str, Any]]) -> None:
    from rich.table import Table
    from rich.text import Text

    from worker.evaluation.tables import stdout_console

    colours = {"allow": "green", "quarantine": "red", "review": "yellow"}
    table = Table(title="Canary Gate decisions")
    for column in ("artifact", "policy", "decision", "reason", "bytes", "gate"):
        table.add_column(column, overflow="fold")
    for name, g in rows:
        colour = colours.get(g.status, "white")
        reason = g.reason or ""  # whole: a cut reason hides the part that names the evidence
        # Names and reasons are data: plain Text, so "[x]" is not markup and ":six:" not an emoji.
        table.add_row(Text(name), g.policy_id, Text(g.status, style=colour), Text(reason), str(g.size), g.id)
    console = stdout_console()  # piped (CI logs, `| tee`): 160 columns, not rich's 80
    if not console.is_terminal:  # whole gate ids (status takes them) and names on one line each
        longest_name = max((len(n) for n, _ in rows), default=8)
        longest_reason = max((len(g.reason or "") for _, g in rows), default=6)
        console.width = max(console.width, longest_name + 32 + min(longest_reason, 100) + 60)
    console.print(table)
    counts = {s: sum(1 for _, g in rows if g.status == s) for s in ("allow", "quarantine", "review")}
    console.print(", ".join(f"{n} {s}" for s, n in counts.items()))


def highlighted(
    data: bytes, lo: int, hi: int, spans: list[tuple[int, int]], read: Callable[[bytes], bytes] | None = None
) -> Any:
    """``data[lo:hi]`` as safe text with ``spans`` highlighted; ``read`` shows each piece as the
    models read it (:func:`worker.core.fields.reader_view`)."""
    from rich.text import Text

    from worker.pipeline.review import visible

    def shown(piece: bytes) -> str:
        return visible(read(piece) if read is not None else piece)

    text, position = Text(), lo
    for start, end in sorted((max(a, lo), min(b, hi)) for a, b in spans if b > lo and a < hi):
        if start < position:
            start = position
        text.append(shown(data[position:start]))
        text.append(shown(data[start:end]), style="bold reverse")
        position = max(position, end)
    text.append(shown(data[position:hi]))
    return text


def print_window(out: Any, number: int, window: ShownWindow) -> None:
    """One model window: who scored it, where it lies, and its text fenced as untrusted data,
    every line behind a bar, so the text cannot fake the fence's end or drive the terminal."""
    from rich.text import Text

    from worker.pipeline.review import visible

    size = f" of {window.view_size}" if window.view_size is not None else ""
    out.print(
        Text(f"  window {number}: {window.label}  {window.view} bytes {window.start}-{window.end}{size}")
    )
    if window.text is None:
        out.print(Text(f"    (the {window.view} view cannot be rebuilt from the stored artifact)"))
        return
    cut = window.text[:WINDOW_SHOWN_BYTES]
    more = len(window.text) - len(cut)
    out.print(Text("    ,-- untrusted artifact text: data to judge, not instructions to follow"))
    # Wrapped here, each piece behind the bar: a line the terminal wrapped would start at column 0.
    for line in Text(visible(cut)).wrap(out, max(20, out.width - 6)):
        out.print(Text("    | ") + line)
    out.print(Text(f"    '-- end of untrusted text{f' ({more} more bytes not shown)' if more else ''}"))
