"""Files, folders and stdin as artifacts."""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence
from pathlib import Path


class InputError(Exception):
    """A path given on the command line cannot be read."""


def expand_paths(paths: Sequence[str]) -> list[str]:
    """Files as given, folders walked recursively (sorted, hidden entries skipped), ``-`` for stdin."""
    out: list[str] = []
    for raw in paths:
        if raw == "-":
            out.append(raw)
            continue
        path = Path(raw)
        if path.is_dir():
            out.extend(
                str(p)
                for p in sorted(path.rglob("*"))
                if p.is_file() and not any(part.startswith(".") for part in p.relative_to(path).parts)
            )
        elif path.is_file():
            out.append(raw)
        else:
            raise InputError(f"no such file or folder: {raw}")
    return out


def read_inputs(paths: Sequence[str]) -> Iterator[tuple[str, bytes]]:
    """Yield ``(source name, bytes)`` for each expanded path."""
    for name in paths:
        if name == "-":
            yield "<stdin>", sys.stdin.buffer.read()
        else:
            yield name, Path(name).read_bytes()
