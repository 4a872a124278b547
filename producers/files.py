"""Files, folders, stdin and registry releases as artifacts."""

from __future__ import annotations

import multiprocessing
import sys
from collections import deque
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from pathlib import Path

import httpx

from producers.registry import RegistryError, ReleaseDiff, is_spec, release_diff


class InputError(Exception):
    """An input given on the command line cannot be read."""


def expand_paths(paths: Sequence[str]) -> list[str]:
    """Files as given, folders walked recursively (sorted, hidden entries skipped), ``-`` for stdin.

    Registry specs (``pypi:NAME[==VER]``, ``npm:NAME[@VER]``) pass through, and
    ``@LIST`` reads a file of inputs, one per line (``#`` comments and blank
    lines skipped): the shape of a nightly registry batch.
    """
    out: list[str] = []
    for raw in paths:
        if raw == "-" or (is_spec(raw) and not Path(raw).exists()):
            out.append(raw)
            continue
        if raw.startswith("@") and Path(raw[1:]).is_file():
            lines = Path(raw[1:]).read_text().splitlines()
            out.extend(expand_paths([s for line in lines if (s := line.strip()) and not s.startswith("#")]))
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


_client: httpx.Client | None = None


def fetch_release(spec: str) -> ReleaseDiff:
    """:func:`release_diff` in a fetch process, over that process's own keep-alive client."""
    global _client
    if _client is None:
        _client = httpx.Client(timeout=60.0, follow_redirects=True)
    return release_diff(_client, spec)


def read_inputs(
    paths: Sequence[str], errors: list[str] | None = None, fetch_ahead: int = 8
) -> Iterator[tuple[str, bytes]]:
    """Yield ``(source name, bytes)`` for each expanded input, in order.

    Registry releases are fetched ``fetch_ahead`` at a time in worker processes
    (spawned on first need): a nightly batch waits on downloads, and unpacking
    and diffing two archives is pure-Python CPU work that threads would serialise
    on one core. Still yielded in input order. One that cannot be fetched,
    verified or opened raises :class:`InputError`, or, when ``errors`` is given,
    is recorded there and the batch goes on (the caller reports it and exits
    non-zero).
    """
    names = iter(paths)
    ahead: deque[tuple[str, Future[ReleaseDiff] | None]] = deque()
    pool: ProcessPoolExecutor | None = None
    try:
        while True:
            while len(ahead) < fetch_ahead and (name := next(names, None)) is not None:
                if is_spec(name) and not Path(name).exists():
                    if pool is None:
                        context = multiprocessing.get_context("spawn")  # no forked copy of the caller
                        pool = ProcessPoolExecutor(max_workers=fetch_ahead, mp_context=context)
                    ahead.append((name, pool.submit(fetch_release, name)))
                else:
                    ahead.append((name, None))
            if not ahead:
                return
            name, fetching = ahead.popleft()
            if fetching is None:
                yield (
                    ("<stdin>", sys.stdin.buffer.read()) if name == "-" else (name, Path(name).read_bytes())
                )
                continue
            try:
                diff = fetching.result()
            except RegistryError as exc:
                if errors is None:
                    raise InputError(str(exc)) from exc
                errors.append(str(exc))
                continue
            yield diff.label, diff.data
    finally:
        if pool is not None:  # all done: reap the processes; cut short: don't wait for a download
            pool.shutdown(wait=not ahead, cancel_futures=True)
