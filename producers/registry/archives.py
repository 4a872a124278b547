"""Release archives opened in memory: nothing is extracted to disk, nothing imported or run."""

from __future__ import annotations

import io
import tarfile
import zipfile
import zlib
from collections.abc import Callable

from producers.registry.errors import RegistryError
from producers.registry.ustar import tar_members

MAX_ARCHIVE_BYTES = 512 * 1024 * 1024  # uncompressed, per archive
MAX_MEMBERS = 100_000
# Past this floor an archive may inflate to at most MAX_RATIO times its own size: source archives
# compress 3-10x, a 400 KB zip of 400 MB (1000x) is a bomb. Inflation streams in CHUNK pieces
# with a running total, so a bomb is refused at the limit, never held whole.
MAX_RATIO = 100
RATIO_FLOOR_BYTES = 32 * 1024 * 1024
CHUNK = 1024 * 1024
FEED = 64 * 1024  # compressed bytes handed to zlib at a time (see _gunzip)


def archive_files(data: bytes, filename: str) -> dict[str, bytes]:
    """Regular files of an archive, in memory, with the common top-level folder removed.

    Links, devices and absolute or ``..`` paths are skipped (they are never
    written anywhere, but they are not package content either). Inflating past
    ``inflation_limit`` (``MAX_ARCHIVE_BYTES``, or ``MAX_RATIO`` times the archive's size) or
    over ``MAX_MEMBERS`` raises rather than truncating: as soon as the declared sizes say so
    (before inflating anything), else once the running total of what was inflated does.
    """
    files: dict[str, bytes] = {}
    total = 0
    limit = inflation_limit(len(data))

    def admit(size: int) -> None:
        nonlocal total
        total += size
        if total > limit or len(files) >= MAX_MEMBERS:
            raise _too_large(filename, len(data), limit)

    def keep(path: str, content: bytes) -> None:
        clean = path.replace("\\", "/")
        while clean.startswith("./"):
            clean = clean[2:]
        if clean and not clean.startswith("/") and ".." not in clean.split("/"):
            files[clean] = content

    try:
        if filename.endswith((".zip", ".whl")):
            with zipfile.ZipFile(io.BytesIO(data)) as zf:
                members = [info for info in zf.infolist() if not info.is_dir()]
                if sum(info.file_size for info in members) > limit or len(members) > MAX_MEMBERS:
                    raise _too_large(filename, len(data), limit)  # declared: refused before inflating
                for info in members:
                    keep(info.filename, _read_member(zf, info, admit))
        else:
            _read_tar(data, filename, limit, admit, keep)
    except (tarfile.TarError, zipfile.BadZipFile, EOFError, OSError) as exc:
        raise RegistryError(f"{filename}: unreadable archive ({type(exc).__name__})") from exc
    return _strip_top(files)


def _read_tar(
    data: bytes, filename: str, limit: int, admit: Callable[[int], None], keep: Callable[[str, bytes], None]
) -> None:
    """A tarball's regular files: a gzipped tar in the common shape read from its headers
    (``producers.registry.ustar``), anything else member by member with tarfile."""
    raw = _gunzip(data, filename, limit)
    found = tar_members(raw, MAX_MEMBERS) if raw is not None else None
    if raw is not None and found is not None:
        for name, start, end in found:
            admit(end - start)
            keep(name, raw[start:end])
        return
    with tarfile.open(fileobj=io.BytesIO(raw or data), mode="r:*") as tf:
        for member in tf:
            if member.isfile():
                admit(member.size)
                handle = tf.extractfile(member)
                keep(member.name, handle.read() if handle else b"")


def inflation_limit(archive_size: int) -> int:
    """How many bytes an archive of ``archive_size`` bytes may inflate to."""
    return min(MAX_ARCHIVE_BYTES, max(RATIO_FLOOR_BYTES, MAX_RATIO * archive_size))


def _too_large(filename: str, size: int, limit: int) -> RegistryError:
    why = f"over {limit // (1024 * 1024)} MB" if limit >= 1024 * 1024 else f"over {limit} bytes"
    if limit < MAX_ARCHIVE_BYTES:
        why += f", {MAX_RATIO}x its {size:,} bytes"
    return RegistryError(f"{filename}: archive larger than the limit ({why}); not gated in part")


def _read_member(zf: zipfile.ZipFile, info: zipfile.ZipInfo, admit: Callable[[int], None]) -> bytes:
    """One zip member, inflated ``CHUNK`` at a time and counted as it comes (a member whose
    header understates its size is refused at the limit, not after)."""
    parts: list[bytes] = []
    with zf.open(info) as handle:
        while chunk := handle.read(CHUNK):
            admit(len(chunk))
            parts.append(chunk)
    return b"".join(parts)


def _gunzip(data: bytes, filename: str, limit: int) -> bytes | None:
    """A single-member gzip stream inflated here (tarfile's stream reads it in small pieces, at
    about a third of the cost of reading a release); ``None`` when it is not one.

    Inflation runs ``CHUNK`` at a time against a running total: past ``limit`` plus room for tar
    headers it raises, so a bomb is refused at the limit, never inflated whole.
    """
    if data[:2] != b"\x1f\x8b":
        return None
    inflater = zlib.decompressobj(wbits=31)
    room = limit + min(1024 * MAX_MEMBERS, max(CHUNK, limit // 8))  # tar headers and padding
    parts: list[bytes] = []
    total = 0
    view = memoryview(data)
    try:
        # The input goes in FEED at a time: an output piece of CHUNK rarely fills before it is
        # used up, and the tail zlib copies back when one does is at most FEED long (handing the
        # whole rest of a 17 MB archive back with each piece copied gigabytes on large sdists).
        for at in range(0, len(data), FEED):
            pending: bytes | memoryview = view[at : at + FEED]
            while True:
                chunk = inflater.decompress(pending, CHUNK)
                pending = inflater.unconsumed_tail
                total += len(chunk)
                if total > room:
                    raise _too_large(filename, len(data), limit)
                parts.append(chunk)
                if inflater.eof or (not pending and len(chunk) < CHUNK):
                    break
            if inflater.eof:
                rest = inflater.unused_data or at + FEED < len(data)
                return None if rest else b"".join(parts)  # several members: tarfile reads them
    except zlib.error:
        return None  # let tarfile report it
    return None  # truncated stream


def _strip_top(files: dict[str, bytes]) -> dict[str, bytes]:
    tops = {p.split("/", 1)[0] for p in files}
    if len(tops) == 1 and all("/" in p for p in files):
        return {p.split("/", 1)[1]: c for p, c in files.items()}
    return files
