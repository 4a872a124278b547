"""Archive bombs are refused early: a compression-ratio limit, inflation counted as it streams."""

from __future__ import annotations

import io
import os
import tarfile
import tracemalloc
import zipfile

import pytest

from producers.registry import RegistryError, archive_files, archives

MB = 1024 * 1024


class _Zeros(io.RawIOBase):
    """``size`` zero bytes, read in pieces (so building a bomb never holds it whole)."""

    def __init__(self, size: int) -> None:
        self.left = size

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:  # type: ignore[no-untyped-def]
        n = min(len(buffer), self.left)
        buffer[:n] = bytes(n)
        self.left -= n
        return n


def _zip_bomb(size: int) -> bytes:
    out = io.BytesIO()
    with (
        zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as zf,
        zf.open("pkg-1.0/data.bin", "w") as member,
    ):
        for _ in range(size // MB):
            member.write(bytes(MB))
    return out.getvalue()


def _tar_gz_bomb(size: int) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz", compresslevel=9) as tf:
        info = tarfile.TarInfo("pkg-1.0/data.bin")
        info.size = size
        tf.addfile(info, _Zeros(size))
    return out.getvalue()


def _peak(call) -> int:  # type: ignore[no-untyped-def]
    tracemalloc.start()
    try:
        call()
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return peak


def test_a_400_kb_zip_of_400_mb_is_refused_before_inflating() -> None:
    """A zip inflating 1000x (400 MB from ~400 KB) is refused on its declared sizes, holding nothing."""
    bomb = _zip_bomb(400 * MB)
    assert len(bomb) < 1 * MB

    def refuse() -> None:
        with pytest.raises(RegistryError, match="larger than the limit.*100x"):
            archive_files(bomb, "pkg-1.0.zip")

    assert _peak(refuse) < 16 * MB


def test_a_zip_whose_headers_understate_its_size_is_refused_at_the_limit(monkeypatch) -> None:
    """A member that inflates past the limit while declaring less is cut off by the running total."""
    monkeypatch.setattr(archives, "RATIO_FLOOR_BYTES", 4 * MB)
    bomb = bytearray(_zip_bomb(64 * MB))
    # Rewrite the declared uncompressed size (local header and central directory) to 1 KB.
    real = (64 * MB).to_bytes(4, "little")
    assert bomb.count(real) == 2
    bomb = bomb.replace(real, (1024).to_bytes(4, "little"))

    def refuse() -> None:
        with pytest.raises(RegistryError):
            archive_files(bytes(bomb), "pkg-1.0.zip")

    assert _peak(refuse) < 24 * MB


def test_a_1_mb_tar_gz_bomb_is_refused_before_it_is_inflated_whole() -> None:
    """A tar.gz of 612 MB in under 1 MB stops inflating at its ratio limit (about 100 MB), not 612 MB."""
    bomb = _tar_gz_bomb(612 * MB)
    assert len(bomb) < 1 * MB

    def refuse() -> None:
        with pytest.raises(RegistryError, match="larger than the limit"):
            archive_files(bomb, "pkg-1.0.tar.gz")

    assert _peak(refuse) < 2 * max(archives.RATIO_FLOOR_BYTES, archives.MAX_RATIO * len(bomb)) + 16 * MB


def test_ordinary_and_small_compressible_archives_still_open() -> None:
    """A release of source text (about 4x) and a small archive of one very repetitive file both open."""
    text = b"".join(
        b"def f%d(x):\n    return x * %d  # %s\n" % (i, i, os.urandom(6).hex().encode()) for i in range(20000)
    )
    small = b"\0" * (8 * MB)  # 8 MB of zeros: thousands of times smaller packed, but under the floor
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as tf:
        for name, body in (("pkg-1.0/mod.py", text), ("pkg-1.0/zeros.bin", small)):
            info = tarfile.TarInfo(name)
            info.size = len(body)
            tf.addfile(info, io.BytesIO(body))
    files = archive_files(out.getvalue(), "pkg-1.0.tar.gz")
    assert files == {"mod.py": text, "zeros.bin": small}
