"""Registry releases as artifacts, against a PyPI simple index and an npm registry on loopback."""

from __future__ import annotations

import gzip
import json
import os
import tarfile
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from producers.files import InputError, expand_paths, read_inputs
from producers.registry import (
    RegistryError,
    ReleaseArchives,
    ReleaseDiff,
    archive_files,
    archives,
    release_diff,
    unified_diff,
)
from tests.fixtures.registry import (
    INIT,
    PKG_HOOK,
    PKG_OLD,
    SETUP_NEW,
    SETUP_OLD,
    npm_files,
    tarball,
)
from worker.cli import app


@pytest.fixture()
def client() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=10) as c:
        yield c


def test_pypi_release_is_diffed_against_its_predecessor(served, client) -> None:
    """A PyPI release becomes a git-style diff against the version before it; unchanged files are left out."""
    reg, _ = served
    old = tarball("demo_pkg-1.0.0", {"setup.py": SETUP_OLD, "demo/__init__.py": INIT})
    new = tarball("demo_pkg-1.0.1", {"setup.py": SETUP_NEW, "demo/__init__.py": INIT})
    yanked = tarball("demo_pkg-1.0.2", {"setup.py": b"import os\n"})
    beta = tarball("demo_pkg-1.1.0b1", {"setup.py": SETUP_NEW})
    reg.pypi("demo-pkg", {"1.0.0": old, "1.0.1": new, "1.0.2": yanked, "1.1.0b1": beta}, yanked=("1.0.2",))

    diff = release_diff(client, "pypi:demo-pkg")  # newest final, non-yanked release, as pip picks
    assert release_diff(client, "pypi:demo-pkg==1.1.0b1").label == "pypi:demo-pkg:1.0.1->1.1.0b1"

    assert diff.label == "pypi:demo-pkg:1.0.0->1.0.1"
    text = diff.data.decode()
    assert text.startswith("diff --git a/setup.py b/setup.py\n--- a/setup.py\n+++ b/setup.py\n")
    assert '-setup(name="demo-pkg", version="1.0.0")' in text
    assert '+setup(name="demo-pkg", version="1.0.1")' in text
    assert "demo/__init__.py" not in text  # unchanged files are not in the diff


def test_first_npm_release_is_a_diff_against_nothing(served, client) -> None:
    """A package's first npm release is a diff against nothing: every file is new."""
    reg, base = served
    reg.npm("@acme/thing", {"0.1.0": tarball("package", npm_files(PKG_OLD))}, base, latest="0.1.0")

    diff = release_diff(client, "npm:@acme/thing")

    assert diff.label == "npm:@acme/thing:0.1.0:new-package"
    text = diff.data.decode()
    assert "diff --git a/index.js b/index.js\nnew file mode 100644\n--- /dev/null\n+++ b/index.js\n" in text
    assert "+module.exports = (a, b) => a + b;" in text


def test_npm_predecessor_follows_semver_not_publish_order(served, client) -> None:
    """An npm release's predecessor is the previous version by semver, not the one published last."""
    reg, base = served
    releases = {
        v: tarball("package", npm_files(PKG_OLD | {"version": v}))
        for v in ("1.10.0", "1.9.0", "1.10.0-beta.2", "1.2.0")
    }
    reg.npm("demo-npm", releases, base, latest="1.10.0")

    assert release_diff(client, "npm:demo-npm").label == "npm:demo-npm:1.10.0-beta.2->1.10.0"
    assert release_diff(client, "npm:demo-npm@1.10.0-beta.2").label == "npm:demo-npm:1.9.0->1.10.0-beta.2"


def test_a_tampered_archive_is_refused(served, client) -> None:
    """An archive whose bytes do not match the registry's digest is refused."""
    reg, base = served
    reg.npm("demo-npm", {"1.0.0": tarball("package", npm_files(PKG_OLD))}, base, latest="1.0.0")
    reg.tamper.add("/tarballs/demo-npm-1.0.0.tgz")

    with pytest.raises(RegistryError, match="sha512 does not match"):
        release_diff(client, "npm:demo-npm")


def test_unknown_package_and_version_are_errors(served, client) -> None:
    """An unknown package or version is a RegistryError naming it."""
    reg, base = served
    reg.npm("demo-npm", {"1.0.0": tarball("package", npm_files(PKG_OLD))}, base, latest="1.0.0")

    with pytest.raises(RegistryError, match="not found"):
        release_diff(client, "pypi:nope")
    with pytest.raises(RegistryError, match="no release 9.9.9"):
        release_diff(client, "npm:demo-npm@9.9.9")


def test_malformed_registry_metadata_is_an_error_not_a_crash(served, client) -> None:
    """Registry metadata of the wrong shape is a RegistryError, not a crash."""
    reg, base = served
    reg.docs["/simple/odd/"] = json.dumps({"name": "odd", "files": 7}).encode()
    reg.docs["/odd-npm"] = json.dumps({"name": "odd-npm", "versions": "1.0.0"}).encode()

    for spec in ("pypi:odd", "npm:odd-npm"):
        with pytest.raises(RegistryError):
            release_diff(client, spec)


def test_archive_members_stay_in_memory_and_links_or_escapes_are_skipped() -> None:
    """Archive members are read in memory; links and paths escaping the archive are skipped."""
    link = tarfile.TarInfo("pkg-1.0/link")
    link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
    files = archive_files(
        tarball("pkg-1.0", {"a.py": b"x = 1\n", ".hidden/evil.pth": b"import os\n", "../up": b"!"}, [link]),
        "pkg-1.0.tar.gz",
    )
    assert files == {"a.py": b"x = 1\n", ".hidden/evil.pth": b"import os\n"}


def test_an_archive_over_the_limit_is_refused_not_cut(monkeypatch: pytest.MonkeyPatch) -> None:
    """An archive over the size limit is refused whole, never diffed in part."""
    monkeypatch.setattr(archives, "MAX_ARCHIVE_BYTES", 1000)
    blob = tarball("pkg-1.0", {"a.txt": b"a" * 600, "b.txt": b"b" * 600})
    with pytest.raises(RegistryError, match="larger than the limit"):
        archive_files(blob, "pkg-1.0.tar.gz")


def test_a_gzip_bomb_is_refused_before_it_is_inflated(monkeypatch: pytest.MonkeyPatch) -> None:
    """A gzip bomb is refused before it is inflated past the limit."""
    monkeypatch.setattr(archives, "MAX_ARCHIVE_BYTES", 1000)
    monkeypatch.setattr(archives, "MAX_MEMBERS", 1)
    bomb = gzip.compress(b"\0" * 5_000_000)  # 5 MB of zeros in ~5 KB: a tar of nothing but padding
    with pytest.raises(RegistryError, match="pkg-1.0.tar.gz: archive larger than the limit"):
        archive_files(bomb, "pkg-1.0.tar.gz")


def test_a_multi_member_gzip_tarball_is_read_whole() -> None:
    """A tarball gzipped as several members is read whole, as one gzip would be."""
    whole = tarball("pkg-1.0", {"a.py": b"x = 1\n", "b.py": b"y = 2\n"})
    raw = gzip.decompress(whole)
    split = gzip.compress(raw[:512]) + gzip.compress(raw[512:])  # two gzip members, one tar stream
    assert archive_files(split, "pkg-1.0.tar.gz") == archive_files(whole, "pkg-1.0.tar.gz")
    assert archive_files(whole, "pkg-1.0.tar.gz") == {"a.py": b"x = 1\n", "b.py": b"y = 2\n"}


def test_binary_and_deleted_files_are_named_in_the_diff() -> None:
    """Deleted and binary files are named in the diff (git's own wording), not dropped."""
    diff = unified_diff({"gone.py": b"x\n", "lib.so": b"\x7fELF\0\0"}, {"lib.so": b"\x7fELF\0\1"}).decode()
    assert "diff --git a/gone.py b/gone.py\ndeleted file mode 100644\n--- a/gone.py\n+++ /dev/null\n" in diff
    assert "Binary files a/lib.so and b/lib.so differ\n" in diff


def test_list_files_expand_to_specs_and_paths(tmp_path: Path) -> None:
    """An @list file expands to the release specs and paths it lists, comments and blanks skipped."""
    (tmp_path / "note.txt").write_text("hello")
    listing = tmp_path / "tonight.txt"
    listing.write_text(
        f"# nightly batch\npypi:six==1.17.0\n\nnpm:@babel/core@7.0.0\n{tmp_path / 'note.txt'}\n"
    )

    assert expand_paths([f"@{listing}"]) == [
        "pypi:six==1.17.0",
        "npm:@babel/core@7.0.0",
        str(tmp_path / "note.txt"),
    ]


def test_read_inputs_records_a_failed_release_and_goes_on(served, tmp_path: Path) -> None:
    """A release that cannot be fetched is recorded as an error while the other inputs are read."""
    (tmp_path / "a.txt").write_bytes(b"plain")
    errors: list[str] = []
    got = list(read_inputs(["npm:missing-pkg", str(tmp_path / "a.txt")], errors))
    assert got == [(str(tmp_path / "a.txt"), b"plain")]
    assert len(errors) == 1 and "missing-pkg" in errors[0]
    with pytest.raises(InputError):
        list(read_inputs(["npm:missing-pkg"]))


def test_canary_scan_gates_registry_releases(served, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`canary scan` gates registry releases: a bump is allowed, an install hook quarantined, a missing release exits 2."""
    reg, base = served
    reg.npm(
        "demo-npm",
        {"1.0.0": tarball("package", npm_files(PKG_OLD)), "1.0.1": tarball("package", npm_files(PKG_HOOK))},
        base,
        latest="1.0.1",
    )
    reg.pypi(
        "demo-pkg",
        {
            "1.0.0": tarball("demo_pkg-1.0.0", {"setup.py": SETUP_OLD, "demo/__init__.py": INIT}),
            "1.0.1": tarball("demo_pkg-1.0.1", {"setup.py": SETUP_NEW, "demo/__init__.py": INIT}),
        },
    )
    monkeypatch.setenv("CANARY_DATA_DIR", str(tmp_path / "canary"))
    runner = CliRunner()

    bump = runner.invoke(app, ["scan", "-p", "malicious-package", "--json", "pypi:demo-pkg"])
    hook = runner.invoke(app, ["scan", "-p", "malicious-package", "--json", "npm:demo-npm"])
    missing = runner.invoke(app, ["scan", "-p", "malicious-package", "npm:demo-npm", "npm:no-such-pkg"])

    assert bump.exit_code == 0, bump.output
    assert json.loads(bump.stdout.splitlines()[0])["decision"] == "allow"
    assert hook.exit_code == 1, hook.output
    assert json.loads(hook.stdout.splitlines()[0])["decision"] == "quarantine"
    assert missing.exit_code == 2  # the release that exists is gated; the one that does not fails loudly
    assert "no-such-pkg" in missing.output


def offline_download(client: httpx.Client, spec: str) -> ReleaseArchives:
    return ReleaseArchives(spec, spec.encode(), "new.tar.gz")


def crashing_diff(archives: ReleaseArchives) -> ReleaseDiff:
    """A diff process that dies on ``crash-always`` releases, and on the first ``crash-once`` one."""
    name = archives.label.split(":", 1)[1]
    marker = Path(os.environ["CANARY_TEST_CRASH_MARKER"])
    if name.startswith("crash-always") or (name.startswith("crash-once") and not marker.exists()):
        marker.touch()
        os._exit(1)
    return ReleaseDiff(archives.label, archives.new)


def test_a_dead_diff_process_delays_releases_it_does_not_drop_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A diff process that dies is replaced and its releases are diffed again, none dropped."""
    monkeypatch.setenv("CANARY_TEST_CRASH_MARKER", str(tmp_path / "crashed"))
    specs = ["pypi:a==1", "pypi:b==1", "pypi:crash-once==1", "pypi:c==1", "pypi:d==1"]
    errors: list[str] = []
    got = list(read_inputs(specs, errors, fetch_ahead=4, download=offline_download, diff=crashing_diff))
    assert (tmp_path / "crashed").exists()  # the pool did break
    assert got == [(spec, spec.encode()) for spec in specs] and errors == []


def test_a_release_that_kills_its_diff_process_twice_is_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A release that kills its diff process twice is reported as not gated; the others are gated."""
    monkeypatch.setenv("CANARY_TEST_CRASH_MARKER", str(tmp_path / "crashed"))
    errors: list[str] = []
    specs = ["pypi:a==1", "pypi:crash-always==1", "pypi:b==1"]
    offline = {"download": offline_download, "diff": crashing_diff, "fetch_ahead": 1}
    got = [name for name, _ in read_inputs(specs, errors, **offline)]
    assert got == ["pypi:a==1", "pypi:b==1"]
    assert errors == ["pypi:crash-always==1: the diff process died twice; not gated"]
    with pytest.raises(InputError, match="died twice"):
        list(read_inputs(specs[1:2], **offline))


def test_the_table_prints_names_as_given(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The decisions table prints an artifact's name as given, never as rich markup."""
    odd = tmp_path / "[bold]pypi:six:1.0"
    odd.write_text("Version bump only.\n")
    monkeypatch.setenv("CANARY_DATA_DIR", str(tmp_path / "canary"))
    monkeypatch.setenv("COLUMNS", "300")

    result = CliRunner().invoke(app, ["scan", str(odd)])

    assert result.exit_code == 0, result.output
    assert "[bold]pypi:six:1.0" in result.stdout


def test_fetch_ahead_keeps_input_order(served, tmp_path: Path) -> None:
    """Releases fetched ahead in parallel still come out in input order."""
    reg, base = served
    versions = [f"1.0.{i}" for i in range(12)]
    reg.npm(
        "demo-npm",
        {v: tarball("package", npm_files(PKG_OLD | {"version": v})) for v in versions},
        base,
        latest=versions[-1],
    )
    (tmp_path / "f.txt").write_bytes(b"file")
    specs = [f"npm:demo-npm@{v}" for v in reversed(versions)]
    inputs = specs[:5] + [str(tmp_path / "f.txt")] + specs[5:]

    labels = [name for name, _ in read_inputs(inputs, [], fetch_ahead=4)]

    expected = [f"npm:demo-npm:{p}->{v}" for p, v in zip(versions[-2::-1], versions[:0:-1], strict=True)]
    expected = expected[:5] + [str(tmp_path / "f.txt")] + expected[5:] + ["npm:demo-npm:1.0.0:new-package"]
    assert labels == expected


def apply_patch(a: list[str], diff: list[str]) -> list[str]:
    """Apply one file's unified diff to ``a``, checking every context and removed line."""
    body = diff[next(i for i, line in enumerate(diff) if line.startswith("+++ ")) + 1 :]
    out: list[str] = []
    pos = i = 0
    while i < len(body):
        old = body[i].split()[1][1:].split(",")
        length = 1 if len(old) == 1 else int(old[1])
        start = int(old[0]) - (1 if length else 0)
        out.extend(a[pos:start])
        pos, i = start, i + 1
        while i < len(body) and not body[i].startswith("@@ "):
            tag, text = body[i][0], body[i][1:]
            if tag in " -":
                assert a[pos] == text
                pos += 1
            if tag in " +":
                out.append(text)
            i += 1
    return out + a[pos:]


@given(
    st.lists(st.sampled_from("abcdefgh"), max_size=40),
    st.lists(st.sampled_from("abcdefghij"), max_size=40),
)
@settings(max_examples=300, deadline=None)
def test_the_patience_diff_turns_old_into_new(old: list[str], new: list[str]) -> None:
    """Applying the patience diff to the old lines gives the new lines, and it is empty only when they are equal."""
    a, b = [c + "\n" for c in old], [c + "\n" for c in new]
    diff = unified_diff({"f": "".join(a).encode()}, {"f": "".join(b).encode()}).decode()
    assert (diff == "") == (a == b)
    if diff:
        assert apply_patch(a, diff.splitlines(keepends=True)) == b
