"""Files, folders, stdin, registry releases and the messages of mailboxes and ticket exports as artifacts."""

from __future__ import annotations

import mailbox
import sys
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from producers.mail import MailError, MailOptions, is_mailbox, read_mailbox
from producers.registry import RegistryError, is_spec
from producers.tables import Fields, RowError, Table, is_table
from worker.core.errors import UsageError

if TYPE_CHECKING:  # the registry client (httpx, archives, a process pool) loads on first release
    from concurrent.futures import Future

    import httpx

    from producers.registry import ReleaseArchives, ReleaseDiff, ReleaseRef
    from producers.registry.pool import ReleasePool


class InputError(UsageError):
    """An input given on the command line cannot be read."""


# Inputs that hold many artifacts: each member is gated on its own, so one bad e-mail quarantines
# that e-mail, not the whole mailbox. Expanded to ``KIND:PATH#KEY`` names (see read_inputs).
CONTAINERS = ("mbox", "maildir", "jsonl", "csv")


def _container(raw: str) -> tuple[str, str] | None:
    """``(kind, path)`` of a ``mbox:PATH`` / ``maildir:PATH`` / ``jsonl:PATH`` input, else None."""
    kind, sep, path = raw.partition(":")
    if not sep or kind not in CONTAINERS or Path(raw).exists():
        return None
    return kind, path


class _Members:
    """Random access to the members of one container, opened once (mailbox keeps a table of
    contents; a JSON-lines file keeps the byte offset of each line)."""

    def __init__(self, kind: str, path: str) -> None:
        self.kind, self.path = kind, path
        self.box: mailbox.Mailbox[mailbox.Message] | None = None
        self.keys: dict[str, str] = {}  # mailboxes: key as text -> mailbox key (mbox keys are ints)
        self.table: Table | None = None  # JSON lines and CSV: producers.tables
        try:
            if kind == "mbox":
                if not Path(path).is_file():
                    raise InputError(f"no such mbox file: {path}")
                self.box = mailbox.mbox(path, create=False)
                if Path(path).stat().st_size and not len(self.box):  # bytes but no "From " line
                    raise InputError(f"not an mbox file (no message found): {path}")
            elif kind == "maildir":
                if not Path(path, "cur").is_dir() and not Path(path, "new").is_dir():
                    raise InputError(f"not a Maildir (no cur/ or new/): {path}")
                self.box = mailbox.Maildir(path, factory=None, create=False)
            if self.box is not None:
                keys = [(str(k), k) for k in self.box.iterkeys()]
                self.keys = dict(keys if kind == "mbox" else sorted(keys))
            elif is_table(kind):
                self.table = Table(kind, path)
        except RowError as exc:
            raise InputError(str(exc)) from exc
        except OSError as exc:
            raise InputError(f"cannot read {kind}:{path}: {exc.strerror or exc}") from exc

    def names(self) -> list[str]:
        """The members' keys, in file order (mbox, JSON lines) or sorted (Maildir file names)."""
        if self.table is not None:
            return self.table.names()
        return list(self.keys)

    def get(self, name: str) -> bytes:
        assert self.box is not None
        return self.box.get_bytes(self.keys[name])


_OPENED: dict[tuple[str, str], tuple[tuple[int, ...], _Members]] = {}
_OPENED_MAX = 8


def _stamp(kind: str, path: str) -> tuple[int, ...]:
    """What changes when the container does: its file, or a Maildir's ``cur`` and ``new`` folders."""
    parts = [Path(path, "cur"), Path(path, "new")] if kind == "maildir" else [Path(path)]
    stats = [p.stat() for p in parts if p.exists()]
    return tuple(n for st in stats for n in (st.st_ino, st.st_size, st.st_mtime_ns))


def _members(kind: str, path: str) -> _Members:
    """The container opened once while it is unchanged: :func:`expand_paths` lists its members and
    :func:`read_inputs` reads them without parsing a large mailbox a second time."""
    try:
        stamp = _stamp(kind, path)
    except OSError:
        stamp = ()
    cached = _OPENED.pop((kind, path), None)
    members = cached[1] if cached is not None and cached[0] == stamp and stamp else _Members(kind, path)
    _OPENED[(kind, path)] = (stamp, members)  # newest last
    while len(_OPENED) > _OPENED_MAX:
        del _OPENED[next(iter(_OPENED))]
    return members


def expand_paths(paths: Sequence[str]) -> list[str]:
    """Files as given, folders walked recursively (sorted, hidden entries skipped), ``-`` for stdin.

    Registry specs (``pypi:NAME[==VER]``, ``npm:NAME[@VER]``) pass through, and
    ``@LIST`` reads a file of inputs, one per line (``#`` comments and blank
    lines skipped): the shape of a nightly registry batch. ``mbox:PATH``,
    ``maildir:PATH`` and ``jsonl:PATH`` (a ticket export, one record per line) become one
    input per message or non-blank line, named ``KIND:PATH#KEY``.
    """
    out: list[str] = []
    for raw in paths:
        if raw == "-" or is_mailbox(raw) or (is_spec(raw) and not Path(raw).exists()):
            out.append(raw)
            continue
        container = _container(raw)
        if container is not None:
            kind, where = container
            out.extend(f"{kind}:{where}#{key}" for key in _members(kind, where).names())
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


def release_refs(names: Sequence[str], errors: list[str]) -> tuple[list[ReleaseRef], list[str]]:
    """Split expanded inputs into registry release references (read without the network) and
    everything else; a malformed spec is recorded in ``errors``."""
    from producers.registry import parse_spec

    refs: list[ReleaseRef] = []
    rest: list[str] = []
    for name in names:
        if not is_spec(name) or Path(name).exists():
            rest.append(name)
            continue
        try:
            refs.append(parse_spec(name))
        except RegistryError as exc:
            errors.append(str(exc))
    return refs, rest


def _member(
    members: _Members, key: str, fields: Fields | None, errors: list[str] | None
) -> Iterator[tuple[str, bytes]]:
    """One member of a container; a table row that does not parse is recorded in ``errors``."""
    if members.table is None:
        yield f"{members.path}#{key}", members.get(key)
        return
    try:
        row = members.table.row(key, fields or {})
    except RowError as exc:
        if errors is None:
            raise InputError(str(exc)) from exc
        errors.append(str(exc))
        return
    yield row


def _mailbox(name: str, errors: list[str] | None, options: MailOptions) -> Iterator[tuple[str, bytes]]:
    try:
        yield from read_mailbox(name, errors, options)
    except MailError as exc:
        if errors is None:
            raise InputError(str(exc)) from exc
        errors.append(str(exc))


def read_inputs(
    paths: Sequence[str],
    errors: list[str] | None = None,
    fetch_ahead: int = 8,
    download: Callable[[httpx.Client, str], ReleaseArchives] | None = None,
    diff: Callable[[ReleaseArchives], ReleaseDiff] | None = None,
    fields: Fields | None = None,
    mail: MailOptions | None = None,
) -> Iterator[tuple[str, bytes]]:
    """Yield ``(source name, bytes)`` for each expanded input, in order.

    Registry releases are fetched ``fetch_ahead`` at a time (see :class:`producers.registry.pool.ReleasePool`: downloads
    in threads, unpacking and diffing in one process per core, started on first need), still
    yielded in input order. One that cannot be fetched, verified or opened raises
    :class:`InputError`, or, when ``errors`` is given, is recorded there and the batch goes on
    (the caller reports it and exits non-zero); ``download`` and ``diff`` replace the registry
    client's (tests). So is a table row that does not parse
    (``intake_failed`` with its line, see :mod:`producers.tables`); ``fields`` maps table rows.
    A live mailbox (``imaps://...``, :mod:`producers.mail`) yields its unmarked messages and marks
    each when the next item is asked for: the caller must register an item before asking again.
    """
    names = iter(paths)
    ahead: deque[tuple[str, Future[ReleaseDiff] | None]] = deque()
    releases: ReleasePool | None = None
    members: _Members | None = None  # the container being read (its members come in a row)
    try:
        while True:
            while len(ahead) < fetch_ahead and (name := next(names, None)) is not None:
                if is_spec(name) and not Path(name).exists():
                    releases = releases or _release_pool(fetch_ahead, download, diff)
                    ahead.append((name, releases.submit(name)))
                else:
                    ahead.append((name, None))
            if not ahead:
                return
            name, fetching = ahead.popleft()
            if fetching is None and is_mailbox(name):
                yield from _mailbox(name, errors, mail or MailOptions())
                continue
            if fetching is None:
                where, _, key = name.rpartition("#")
                container = _container(where) if where else None
                if container is not None:
                    if members is None or (members.kind, members.path) != container:
                        members = _members(*container)
                    yield from _member(members, key, fields, errors)
                    continue
                yield ("<stdin>", sys.stdin.buffer.read()) if name == "-" else (name, Path(name).read_bytes())
                continue
            try:
                release = fetching.result()
            except RegistryError as exc:
                if errors is None:
                    raise InputError(str(exc)) from exc
                errors.append(str(exc))
                continue
            yield release.label, release.data
    finally:  # all done: reap the processes; cut short: don't wait for a download
        if releases is not None:
            releases.close(wait=not ahead)


def _release_pool(
    fetch_ahead: int,
    download: Callable[[httpx.Client, str], ReleaseArchives] | None,
    diff: Callable[[ReleaseArchives], ReleaseDiff] | None,
) -> ReleasePool:
    """The pool that fetches and diffs releases, built when the first one is asked for."""
    from producers.registry import diff_archives, fetch_archives
    from producers.registry.pool import ReleasePool

    return ReleasePool(fetch_ahead, download or fetch_archives, diff or diff_archives)
