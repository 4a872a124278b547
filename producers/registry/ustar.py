"""Tar members found straight from their header blocks: the common shape of a release archive, fast.

``tarfile`` parses every field of every header in Python (mode, owner, times, each decoded) and,
for the pax header most sdists carry before every member, a second header too: on real releases
that was about half of the CPU time of opening an archive. Opening one needs only each member's
name, type, size and place. This reads those and nothing else:

- regular files (types ``0``, NUL, ``7``) as ``(name, start, end)`` offsets into the tar bytes;
- folders and links (``1``-``6``) skipped, as the caller skips them;
- pax extended headers (``x``: ``path`` and ``size`` for the next member, sparse or binary-named
  ones left to tarfile; ``g`` holding only a
  ``comment``, as git archive writes, skipped) and GNU long names (``L``; ``K`` link names
  skipped) applied as tarfile applies them;
- POSIX ustar's name prefix joined, names decoded as tarfile does (UTF-8, surrogateescape).

Anything else (a sparse or unknown type, a base-256 size, a checksum that does not add up, a
member running past the end, a malformed pax record) answers ``None``: the caller then reads the
archive with ``tarfile``, which reads or refuses it exactly as before. So does an archive whose
first block is empty. Reading stops at the first all-zero block, as tarfile's does.
"""

from __future__ import annotations

BLOCK = 512
_ZERO = bytes(BLOCK)
_REGULAR = frozenset(b"0\x007")
_SKIPPED = frozenset(b"123456")
_META = frozenset(b"xgLK")
_POSIX_MAGIC = b"ustar\x0000"


def tar_members(raw: bytes, max_members: int) -> list[tuple[str, int, int]] | None:
    """``(name, start, end)`` of each regular file in the tar bytes ``raw``, in order; ``None``
    when the archive needs ``tarfile`` (see the module docstring), or has over ``max_members``
    headers (tarfile then refuses it member by member, at the limit)."""
    reader = _Reader(raw)
    pos = 0
    for _ in range(max_members + 1):
        if pos + BLOCK > len(raw) or raw[pos : pos + BLOCK] == _ZERO:
            return reader.found if pos else None
        following = reader.member(pos)
        if following is None:
            return None
        pos = following
    return None


class _Reader:
    """The members found so far, and what the last pax or GNU long-name header said of the next."""

    def __init__(self, raw: bytes) -> None:
        self.raw = raw
        self.found: list[tuple[str, int, int]] = []
        self.pax: dict[bytes, bytes] = {}
        self.long_name: str | None = None

    def member(self, pos: int) -> int | None:
        """Read the header at ``pos``; where the next one starts, or None (use tarfile)."""
        header = self.raw[pos : pos + BLOCK]
        if sum(header[:148]) + 256 + sum(header[156:]) != _octal(header[148:156]):
            return None
        kind = header[156]
        size = _octal(header[124:136])
        if kind not in _META and b"size" in self.pax:
            size = _octal(self.pax[b"size"], base=10)
        start = pos + BLOCK
        if size < 0 or start + size > len(self.raw):
            return None
        body = self.raw[start : start + size] if kind in _META else b""
        if kind == ord("x"):
            parsed = _pax(body)
            if parsed is None or any(k.startswith((b"GNU.sparse", b"hdrcharset")) for k in parsed):
                return None
            self.pax = parsed
        elif kind == ord("L"):
            self.long_name = _text(body)
        elif kind == ord("g"):  # global: only a comment (git archive's commit id) is harmless here
            if set(_pax(body) or {b"?": b""}) - {b"comment"}:
                return None
        elif kind in _REGULAR or kind in _SKIPPED:
            name = self._name(header)
            self.pax, self.long_name = {}, None
            if kind in _REGULAR and not (kind == 0 and _text(header[:100]).endswith("/")):  # v7 folder
                self.found.append((name, start, start + size))
        elif kind != ord("K"):
            return None
        return start - (-size // BLOCK) * BLOCK

    def _name(self, header: bytes) -> str:
        """A member's name: a pax ``path`` (trailing slashes dropped, as tarfile drops them),
        else a GNU long name, else the header's own (with a ustar prefix)."""
        if b"path" in self.pax:
            return _text(self.pax[b"path"]).rstrip("/")
        return self.long_name if self.long_name is not None else _name(header)


def _octal(field: bytes, base: int = 8) -> int:
    """A header's number (NUL- or space-terminated octal); -1 when it is not one (base-256 too)."""
    text = field.split(b"\0", 1)[0].strip()
    try:
        return int(text or b"0", base) if text.isdigit() or not text else -1
    except ValueError:
        return -1


def _text(value: bytes) -> str:
    return value.split(b"\0", 1)[0].decode("utf-8", "surrogateescape")


def _name(header: bytes) -> str:
    name = _text(header[:100])
    if header[257:265] == _POSIX_MAGIC:
        prefix = _text(header[345:500])
        if prefix:
            return f"{prefix}/{name}"
    return name


def _pax(block: bytes) -> dict[bytes, bytes] | None:
    """The records of a pax extended header (``"LEN key=value\\n"``); None if one is malformed."""
    out: dict[bytes, bytes] = {}
    pos = 0
    while pos < len(block) and block[pos] != 0:
        space = block.find(b" ", pos)
        try:
            length = int(block[pos:space])
        except ValueError:
            return None
        record = block[space + 1 : pos + length]
        if space < 0 or length <= 0 or not record.endswith(b"\n") or b"=" not in record:
            return None
        key, _, value = record[:-1].partition(b"=")
        out[key] = value
        pos += length
    return out
