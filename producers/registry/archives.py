"""Release archives opened in memory: nothing is extracted to disk, nothing imported or run."""

from __future__ import annotations

import io
import tarfile
import zipfile
import zlib

from producers.registry.errors import RegistryError

MAX_ARCHIVE_BYTES = 512 * 1024 * 1024  # uncompressed, per archive
MAX_MEMBERS = 100_000


def archive_files(data: bytes, filename: str) -> dict[str, bytes]:
    """Regular files of an archive, in memory, with the common top-level folder removed.

    Links, devices and absolute or ``..`` paths are skipped (they are never
    written anywhere, but they are not package content either). Over
    ``MAX_ARCHIVE_BYTES`` or ``MAX_MEMBERS`` raises rather than truncating.
    """
    files: dict[str, bytes] = {}
    total = 0

    def admit(size: int) -> None:
        nonlocal total
        total += size
        if total > MAX_ARCHIVE_BYTES or len(files) >= MAX_MEMBERS:
            raise RegistryError(f"{filename}: archive larger than the limit; not gated in part")

    def keep(path: str, content: bytes) -> None:
        clean = path.replace("\\", "/")
        while clean.startswith("./"):
            clean = clean[2:]
        if clean and not clean.startswith("/") and ".." not in clean.split("/"):
            files[clean] = content

    try:
        if filename.endswith((".zip", ".whl")):
            with zipfile.ZipFile(io.BytesIO(data)) as zf:
                for info in zf.infolist():
                    if not info.is_dir():
                        admit(info.file_size)
                        keep(info.filename, zf.read(info))
        else:
            with tarfile.open(fileobj=io.BytesIO(_gunzip(data, filename) or data), mode="r:*") as tf:
                for member in tf:
                    if member.isfile():
                        admit(member.size)
                        handle = tf.extractfile(member)
                        keep(member.name, handle.read() if handle else b"")
    except (tarfile.TarError, zipfile.BadZipFile, EOFError, OSError) as exc:
        raise RegistryError(f"{filename}: unreadable archive ({type(exc).__name__})") from exc
    return _strip_top(files)


def _gunzip(data: bytes, filename: str) -> bytes | None:
    """A single-member gzip stream inflated in one call (tarfile's stream reads it in small pieces,
    at about a third of the cost of reading a release); ``None`` when it is not one.

    Inflation stops past the archive limit plus room for tar headers, so a bomb raises before it
    is held in memory.
    """
    if data[:2] != b"\x1f\x8b":
        return None
    inflater = zlib.decompressobj(wbits=31)
    try:
        out = inflater.decompress(data, MAX_ARCHIVE_BYTES + 1024 * MAX_MEMBERS)
    except zlib.error:
        return None  # let tarfile report it
    if inflater.unconsumed_tail:
        raise RegistryError(f"{filename}: archive larger than the limit; not gated in part")
    return out if inflater.eof and not inflater.unused_data else None


def _strip_top(files: dict[str, bytes]) -> dict[str, bytes]:
    tops = {p.split("/", 1)[0] for p in files}
    if len(tops) == 1 and all("/" in p for p in files):
        return {p.split("/", 1)[1]: c for p, c in files.items()}
    return files
