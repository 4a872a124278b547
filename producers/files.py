"""Files, folders, stdin and registry releases as artifacts."""

from __future__ import annotations

import multiprocessing
import sys
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
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


class _Fetchers:
    """Spawned fetch processes, started on first need; a pool broken by a dying process is replaced."""

    def __init__(self, workers: int, fetch: Callable[[str], ReleaseDiff]) -> None:
        self.workers, self.fetch = workers, fetch
        self.pool: ProcessPoolExecutor | None = None

    def submit(self, spec: str) -> Future[ReleaseDiff]:
        if self.pool is None:
            context = multiprocessing.get_context("spawn")  # no forked copy of the caller's state
            self.pool = ProcessPoolExecutor(max_workers=self.workers, mp_context=context)
        return self.pool.submit(self.fetch, spec)

    def close(self, wait: bool) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=wait, cancel_futures=True)
            self.pool = None


@dataclass
class _Pending:
    name: str
    fetching: Future[ReleaseDiff] | None = None  # None: a file or stdin, read when its turn comes
    tries: int = 1
    error: str | None = None  # a release given up on: reported when its turn comes


def read_inputs(
    paths: Sequence[str],
    errors: list[str] | None = None,
    fetch_ahead: int = 8,
    fetch: Callable[[str], ReleaseDiff] = fetch_release,
) -> Iterator[tuple[str, bytes]]:
    """Yield ``(source name, bytes)`` for each expanded input, in order.

    Registry releases are fetched ``fetch_ahead`` at a time in worker processes
    (spawned on first need): a nightly batch waits on downloads, and unpacking
    and diffing two archives is pure-Python CPU work that threads would serialise
    on one core. Still yielded in input order. One that cannot be fetched,
    verified or opened raises :class:`InputError`, or, when ``errors`` is given,
    is recorded there and the batch goes on (the caller reports it and exits
    non-zero). A fetch process that dies (killed, out of memory) breaks its pool:
    the releases in flight are fetched again in a new one, and one caught in a
    second break is reported as not fetched.
    """
    names = iter(paths)
    ahead: deque[_Pending] = deque()
    fetchers = _Fetchers(fetch_ahead, fetch)
    try:
        while True:
            while len(ahead) < fetch_ahead and (name := next(names, None)) is not None:
                remote = is_spec(name) and not Path(name).exists()
                ahead.append(_Pending(name, fetchers.submit(name) if remote else None))
            if not ahead:
                return
            item = ahead.popleft()
            if item.error is not None:
                _failed(item.error, errors)
                continue
            if item.fetching is None:
                name = item.name
                yield ("<stdin>", sys.stdin.buffer.read()) if name == "-" else (name, Path(name).read_bytes())
                continue
            try:
                diff = item.fetching.result()
            except BrokenProcessPool:
                _refetch(fetchers, item, ahead)
                continue
            except RegistryError as exc:
                _failed(str(exc), errors, exc)
                continue
            yield diff.label, diff.data
    finally:  # all done: reap the processes; cut short: don't wait for a download
        fetchers.close(wait=not ahead)


def _refetch(fetchers: _Fetchers, item: _Pending, ahead: deque[_Pending]) -> None:
    """Replace the broken pool; ``item`` and every release whose fetch it lost go to the new one."""
    fetchers.close(wait=False)
    lost = [p for p in ahead if p.fetching is not None and _lost(p.fetching)]
    for pending in [item, *lost]:
        pending.tries += 1
        if pending.tries <= 2:
            pending.fetching = fetchers.submit(pending.name)
        else:
            pending.fetching, pending.error = None, f"{pending.name}: the fetch process died twice; not gated"
    ahead.appendleft(item)


def _lost(fetching: Future[ReleaseDiff]) -> bool:
    return not fetching.done() or isinstance(fetching.exception(), BrokenProcessPool)


def _failed(message: str, errors: list[str] | None, cause: Exception | None = None) -> None:
    if errors is None:
        raise InputError(message) from cause
    errors.append(message)
