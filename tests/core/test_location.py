"""Byte offsets to file and line: what SARIF results point at."""

from __future__ import annotations

from worker.core.location import Location, Locator

DIFF = (
    b"diff --git a/README.md b/README.md\n"
    b"--- a/README.md\n"
    b"+++ b/README.md\n"
    b"@@ -10,3 +10,4 @@\n"
    b" intro\n"
    b"-old line\n"
    b"+new line\n"
    b"+NEEDLE one\n"
    b" end\n"
    b"diff --git a/src/app.js b/src/app.js\n"
    b"--- a/src/app.js\n"
    b"+++ b/src/app.js\n"
    b"@@ -1,2 +1,2 @@\n"
    b" a\n"
    b" b\n"
    b"@@ -40,4 +40,5 @@\n"
    b" c\n"
    b"-removed\n"
    b"-removed too\n"
    b"+NEEDLE two\n"
    b"\\ No newline at end of file\n"
    b"+NEEDLE three\n"
    b"diff --git a/gone.py b/gone.py\n"
    b"deleted file mode 100644\n"
    b"--- a/gone.py\n"
    b"+++ /dev/null\n"
    b"@@ -1,3 +0,0 @@\n"
    b"-x = 1\n"
    b"-NEEDLE four\n"
)


def _at(needle: bytes, data: bytes = DIFF) -> Location:
    return Locator(data).at(data.index(needle) + 3)


def test_added_line_is_located_in_the_new_file():
    """An added line is named by its file and its line in the new version."""
    assert _at(b"NEEDLE one") == Location("README.md", 12)


def test_removed_lines_do_not_count_in_the_new_file():
    """Removed lines and "No newline" markers are skipped; the second hunk starts from its header."""
    assert _at(b"NEEDLE two") == Location("src/app.js", 41)
    assert _at(b"NEEDLE three") == Location("src/app.js", 42)


def test_a_deleted_file_is_located_in_its_old_version():
    """A deleted file has no new version: its old line numbers are used."""
    assert _at(b"NEEDLE four") == Location("gone.py", 2)


def test_a_file_header_is_line_one_of_that_file():
    """Evidence on a file's header lines (a manifest-only check) points at the file's first line."""
    assert Locator(DIFF).at(DIFF.index(b"diff --git a/src")) == Location("src/app.js", 1)


def test_a_hunk_header_is_the_hunk_start():
    """Evidence on a hunk header points at the line the hunk starts at."""
    assert _at(b"@@ -40") == Location("src/app.js", 40)


def test_plain_text_is_located_by_line_only():
    """An artifact that is not a diff has no file path, only a line; offsets past the end clamp."""
    text = b"one\ntwo\nthree NEEDLE\n"
    assert _at(b"NEEDLE", text) == Location("", 3)
    assert Locator(text).at(10_000) == Location("", 4)
    assert Locator(b"").at(0) == Location("", 1)
