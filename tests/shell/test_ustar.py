"""Tarballs read from their headers (``producers.registry.ustar``) give what tarfile gives, and
anything unusual is left to tarfile."""

from __future__ import annotations

import gzip
import io
import tarfile

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from producers.registry import RegistryError, archive_files
from producers.registry.ustar import tar_members

LONG = "pkg-1.0/" + "/".join(["deeply-nested-folder"] * 8) + "/module_with_a_long_name.py"


def tar_bytes(files: dict[str, bytes], fmt: int, extra: tuple[tarfile.TarInfo, ...] = ()) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=fmt) as tf:
        for name, content in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(content)
            tf.addfile(info, io.BytesIO(content))
        for info in extra:
            tf.addfile(info)
    return buf.getvalue()


def by_tarfile(raw: bytes) -> dict[str, bytes]:
    """Regular files as tarfile reads them."""
    out = {}
    with tarfile.open(fileobj=io.BytesIO(raw)) as tf:
        for member in tf:
            if member.isfile():
                handle = tf.extractfile(member)
                out[member.name] = handle.read() if handle else b""
    return out


def by_headers(raw: bytes) -> dict[str, bytes] | None:
    found = tar_members(raw, 1000)
    return None if found is None else {name: raw[start:end] for name, start, end in found}


def link() -> tarfile.TarInfo:
    info = tarfile.TarInfo("pkg-1.0/link")
    info.type, info.linkname = tarfile.SYMTYPE, "/etc/passwd"
    return info


def folder() -> tarfile.TarInfo:
    info = tarfile.TarInfo("pkg-1.0/sub")
    info.type = tarfile.DIRTYPE
    return info


@pytest.mark.parametrize("fmt", [tarfile.PAX_FORMAT, tarfile.GNU_FORMAT, tarfile.USTAR_FORMAT])
def test_every_tar_format_reads_as_tarfile_reads_it(fmt: int) -> None:
    """PAX, GNU and ustar tarballs (long and non-ASCII names, empty files, folders, links) give
    the same files read from their headers as through tarfile."""
    files = {"pkg-1.0/a.py": b"x = 1\n", "pkg-1.0/empty.txt": b"", "pkg-1.0/big.bin": bytes(range(256)) * 9}
    if fmt != tarfile.USTAR_FORMAT:  # ustar can hold neither
        files |= {LONG: b"long\n", "pkg-1.0/caf\u00e9.py": b"accent\n"}
    raw = tar_bytes(files, fmt, (link(), folder()))

    assert by_headers(raw) == by_tarfile(raw) == files


@given(
    st.dictionaries(
        st.text("abcxyz\u00e9/._-", min_size=1, max_size=120).filter(lambda n: not n.startswith("/")),
        st.binary(max_size=2000),
        max_size=6,
    ),
    st.sampled_from([tarfile.PAX_FORMAT, tarfile.GNU_FORMAT]),
)
@settings(max_examples=150, deadline=None)
def test_random_tarballs_read_as_tarfile_reads_them(files: dict[str, bytes], fmt: int) -> None:
    """Any tarball tarfile writes is read from its headers exactly as tarfile reads it back (an
    empty one is left to tarfile)."""
    raw = tar_bytes({f"pkg/{name}": data for name, data in files.items()}, fmt)
    got = by_headers(raw)
    assert got == by_tarfile(raw) if files else got is None


def test_a_sparse_member_or_a_bad_checksum_is_left_to_tarfile() -> None:
    """An archive the header reader does not know (a sparse member, a checksum that does not add
    up) is left to tarfile, and archive_files still reads it as tarfile does."""
    raw = bytearray(tar_bytes({"pkg-1.0/a.py": b"x = 1\n", "pkg-1.0/b.py": b"y = 2\n"}, tarfile.GNU_FORMAT))
    sparse = bytes(raw[:156]) + b"S" + bytes(raw[157:])
    raw[1024 + 10] ^= 1  # the second header's name, its checksum unchanged: tarfile stops there

    assert by_headers(sparse) is None
    assert by_headers(bytes(raw)) is None
    assert archive_files(gzip.compress(bytes(raw)), "pkg-1.0.tar.gz") == {"a.py": b"x = 1\n"}


def test_a_member_cut_short_is_refused_as_tarfile_refuses_it() -> None:
    """A tarball whose last member runs past its end is unreadable, as it was through tarfile."""
    raw = tar_bytes({"pkg-1.0/a.py": b"x" * 5000}, tarfile.PAX_FORMAT)
    cut = raw[: raw.index(b"x" * 100) + 1000]

    assert by_headers(cut) is None
    with pytest.raises(RegistryError, match="unreadable archive"):
        archive_files(gzip.compress(cut), "pkg-1.0.tar.gz")
