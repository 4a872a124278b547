"""Files, folders, stdin and registry releases as artifacts."""

from __future__ import annotations

import sys
from collections import deque
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
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


def read_inputs(
    paths: Sequence[str], errors: list[str] | None = None, fetch_ahead: int = 8
) -> Iterator[tuple[str, bytes]]:
    """Yield ``(source name, bytes)`` for each expanded input, in order.

    Registry releases are fetched ``fetch_ahead`` at a time in threads (a
    nightly batch is download-bound), still yielded in input order. One that
    cannot be fetched, verified or opened raises :class:`InputError`, or, when
    ``errors`` is given, is recorded there and the batch goes on (the caller
    reports it and exits non-zero).
    """
    names = iter(paths)
    ahead: deque[tuple[str, Future[ReleaseDiff] | None]] = deque()
    client: httpx.Client | None = None
    with ThreadPoolExecutor(max_workers=fetch_ahead, thread_name_prefix="canary-fetch") as pool:
        try:
            while True:
                while len(ahead) < fetch_ahead and (name := next(names, None)) is not None:
                    if is_spec(name) and not Path(name).exists():
                        client = client or httpx.Client(timeout=60.0, follow_redirects=True)
                        ahead.append((name, pool.submit(release_diff, client, name)))
                    else:
                        ahead.append((name, None))
                if not ahead:
                    return
                name, fetching = ahead.popleft()
                if fetching is None:
                    yield (
                        ("<stdin>", sys.stdin.buffer.read())
                        if name == "-"
                        else (name, Path(name).read_bytes())
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
            for _, pending in ahead:
                if pending is not None:
                    pending.cancel()
            if client is not None:
                client.close()
