"""Unified-diff parsing: files, added/removed line runs with byte offsets, manifest helpers."""

from __future__ import annotations

from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import worker.core.diff as diff_module
from worker.core.diff import parse_diff
from worker.core.paths import is_manifest, is_package_metadata

RELEASE = b"""diff --git a/package.json b/package.json
index 1a2b3c4..5d6e7f8 100644
--- a/package.json
+++ b/package.json
@@ -1,5 +1,6 @@
 {
   "name": "left-pad",
-  "version": "1.2.3",
+  "version": "1.2.4",
+  "license": "MIT",
   "main": "index.js"
diff --git a/lib/native.node b/lib/native.node
new file mode 100644
index 0000000..a1b2c3d
Binary files /dev/null and b/lib/native.node differ
diff --git a/src/new.py b/src/new.py
new file mode 100644
--- /dev/null
+++ b/src/new.py
@@ -0,0 +1,3 @@
+import os
+--- this is content, not a header
+print(os.name)
diff --git a/old.txt b/old.txt
deleted file mode 100644
--- a/old.txt
+++ /dev/null
@@ -1,2 +0,0 @@
-goodbye
-world
"""

PLAIN = b"""--- a/README.md\t2024-01-01 00:00:00
+++ b/README.md\t2024-01-02 00:00:00
@@ -1,2 +1,2 @@
 # Title
-old line
+new line
"""


def edit(path: str, before: str, after: str) -> bytes:
    """A one-line modification of ``path``."""
    return (
        f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n@@ -1,3 +1,3 @@\n x\n-{before}\n+{after}\n y\n"
    ).encode()


def test_files_and_their_kinds():
    """Every file of a multi-file git diff is found with its path and new/deleted/binary flags."""
    diff = parse_diff(RELEASE)
    assert diff is not None
    summary = [(f.path, f.is_new, f.is_deleted, f.is_binary) for f in diff.files]
    assert summary == [
        ("package.json", False, False, False),
        ("lib/native.node", True, False, True),
        ("src/new.py", True, False, False),
        ("old.txt", False, True, False),
    ]


def test_added_and_removed_line_counts():
    """Added and removed lines are counted per file; a "---" content line is not a header."""
    diff = parse_diff(RELEASE)
    assert diff is not None
    counts = {f.path: (f.added_lines, f.removed_lines) for f in diff.files}
    assert counts == {
        "package.json": (2, 1),
        "lib/native.node": (0, 0),
        "src/new.py": (3, 0),
        "old.txt": (0, 2),
    }


def test_added_runs_are_byte_spans_of_plus_lines():
    """Each added run is a byte span of the original diff covering consecutive "+" lines."""
    diff = parse_diff(RELEASE)
    assert diff is not None
    runs = [RELEASE[s:e] for s, e in diff.added_runs()]
    assert runs[0] == b'+  "version": "1.2.4",\n+  "license": "MIT",\n'
    assert runs[1].startswith(b"+import os\n+--- this is content")
    assert all(line.startswith(b"+") for run in runs for line in run.splitlines())


def test_offsets_find_files_and_added_lines():
    """file_at and in_added answer for any byte offset of the diff."""
    diff = parse_diff(RELEASE)
    assert diff is not None
    offset = RELEASE.index(b"print(os.name)")
    assert diff.file_at(offset).path == "src/new.py"
    assert diff.in_added(offset)
    assert not diff.in_added(RELEASE.index(b'"main"'))
    assert not diff.in_added(RELEASE.index(b"goodbye"))


def test_plain_unified_diff_without_git_headers():
    """A ``diff -u`` with timestamps parses too."""
    diff = parse_diff(PLAIN)
    assert diff is not None
    (only,) = diff.files
    assert (only.path, only.old_path, only.added_lines, only.removed_lines) == (
        "README.md",
        "README.md",
        1,
        1,
    )


@pytest.mark.parametrize("block", [1, 16, 64, 1 << 23])
def test_block_size_does_not_change_the_result(block):
    """Parsing in blocks (for very large diffs) gives the same files and runs."""
    reference = parse_diff(RELEASE)
    diff = parse_diff(RELEASE, block=block)
    assert reference is not None and diff is not None
    assert diff.files == reference.files
    assert diff.added.tolist() == reference.added.tolist()


@pytest.mark.parametrize("text", [b"", b"just some prose\n--- a separator\n", b"+ bullet\n- bullet\n"])
def test_text_that_is_not_a_diff(text):
    """Prose, markdown separators and bullets are not a diff."""
    assert parse_diff(text) is None


def test_manifest_only_release():
    """An edit to package.json alone is "manifest only"; add a changelog line and it is not."""
    only_manifest = parse_diff(edit("package.json", '"version": "1.0.0",', '"version": "1.0.1",'))
    with_changelog = parse_diff(
        edit("package.json", '"version": "1.0.0",', '"version": "1.0.1",') + edit("CHANGELOG.md", "", "- fix")
    )
    with_lockfile = parse_diff(edit("package.json", "a", "b") + edit("package-lock.json", "c", "d"))
    assert only_manifest is not None and only_manifest.manifest_only
    assert with_changelog is not None and not with_changelog.manifest_only
    assert with_lockfile is not None and with_lockfile.manifest_only


def test_new_package_is_not_manifest_only():
    """A brand-new package made only of setup.py is new code, not a manifest-only release."""
    diff = parse_diff(
        b"diff --git a/setup.py b/setup.py\nnew file mode 100644\n--- /dev/null\n+++ b/setup.py\n"
        b"@@ -0,0 +1 @@\n+from setuptools import setup; setup(name='x')\n"
    )
    assert diff is not None and not diff.manifest_only


def test_new_binaries():
    """Binary files that appear in the release are listed."""
    diff = parse_diff(RELEASE)
    assert diff is not None
    assert [f.path for f in diff.new_binaries] == ["lib/native.node"]


@pytest.mark.parametrize(
    ("path", "manifest", "metadata"),
    [
        ("package.json", True, False),
        ("sub/dir/setup.py", True, False),
        ("setup.cfg", True, False),
        ("pyproject.toml", True, False),
        ("site-packages/evil.pth", True, False),
        ("package-lock.json", False, True),
        ("pkg.egg-info/PKG-INFO", False, True),
        ("src/main.py", False, False),
    ],
)
def test_manifest_and_metadata_paths(path, manifest, metadata):
    """Install manifests (incl. .pth files) and package metadata are recognized by path."""
    assert (is_manifest(path), is_package_metadata(path)) == (manifest, metadata)


DIFF_LINES = [
    "diff --git a/x.py b/x.py",
    "diff",
    "dif",
    "--- a/x.py",
    "+++ b/x.py",
    "--- ",
    "+++ ",
    "---",
    "+++",
    "-- ",
    "++ ",
    "+",
    "-",
    "++",
    "--",
    "+added",
    "-removed",
    " context",
    "",
    "@@ -1 +1,2 @@",
    "@@",
    "@",
    "new file mode 100644",
    "new",
    "ne",
    "new\r",
    "GIT binary patch",
    "GIT",
    "deleted file mode 100644",
    "dele",
    "Binary files a/x and b/y differ",
    "Bina",
    "+++ /dev/null",
    "--- /dev/null",
    "+--- not a header",
]
line_soups = st.tuples(
    st.lists(st.sampled_from(DIFF_LINES), max_size=40).map("\n".join), st.sampled_from(["", "\n", "\n\n"])
).map(lambda parts: (parts[0] + parts[1]).encode())


@settings(max_examples=400, deadline=None)
@given(line_soups)
def test_small_diffs_classify_their_lines_as_the_block_scan_does(data):
    """The regex scan of a small diff finds the header lines and added/removed runs the numpy scan finds."""
    small = diff_module._scan_small(data)
    block = diff_module._scan_block(data, 0, len(data))
    for got, expected in zip(small, block, strict=True):
        assert got.dtype == expected.dtype and got.tolist() == expected.tolist()


@settings(max_examples=200, deadline=None)
@given(line_soups)
def test_small_diffs_parse_as_large_ones_do(data):
    """A diff under the small-diff size parses to the same files and runs as through the block scan."""
    small = parse_diff(data)
    with mock.patch.object(diff_module, "SMALL_DIFF", -1):
        block = parse_diff(data)
    assert (small is None) == (block is None)
    if small is not None and block is not None:
        assert small.files == block.files
        assert (small.added.tolist(), small.removed.tolist()) == (
            block.added.tolist(),
            block.removed.tolist(),
        )


def test_a_header_pair_inside_a_run_splits_it():
    """A ---/+++ pair between removed and added lines is no removed or added line itself."""
    data = b"diff --git a/x b/x\n-old\n--- a/x\n+++ b/x\n+new\n"
    diff = parse_diff(data)
    assert diff is not None and diff.added.tolist() == [[len(data) - 5, len(data)]]
    assert diff.removed.tolist() == [[19, 24]]


def test_a_diff_knows_which_globs_its_files_match():
    """Rules restricted to files are asked about a diff only if one of its files matches, by path or name."""
    diff = parse_diff(RELEASE)
    assert diff is not None
    assert diff.has_file(("package.json",)) and diff.has_file(("src/*.py",)) and diff.has_file(("*.py",))
    assert not diff.has_file(("extconf.rb", "*.gemspec"))


def test_the_same_bytes_object_is_parsed_once_and_a_large_one_is_not_kept(monkeypatch):
    """A vote reads one window as added views, as prose and for locations: the second parse of the
    same bytes object returns the first's diff; equal bytes in another object, or another block
    size, are parsed again; bytes over 1 MB are never kept alive by the module."""
    from worker.core import diff as module

    monkeypatch.setattr(module, "_last", None)
    calls = []
    parse = module._parse_diff
    monkeypatch.setattr(
        module, "_parse_diff", lambda data, block: calls.append(len(data)) or parse(data, block)
    )
    data = RELEASE
    first = parse_diff(data)
    assert first is not None and parse_diff(data) is first and len(calls) == 1
    assert parse_diff(bytes(bytearray(data))) is not first and len(calls) == 2
    assert parse_diff(data, block=64) is not None and len(calls) == 3
    big = RELEASE + b"+" + b"x" * (1 << 20) + b"\n"
    parse_diff(big)
    assert module._last is None
    parse_diff(big)
    assert len(calls) == 5
