"""The prose a unified diff adds inside code: comments, docstrings and sentence-like strings.

An instruction planted in a pull request hides in a comment or a string of a code
file. A text model reads the window around it, which is mostly code, and code reads
as harmless: the instruction is diluted. :func:`diff_prose` gathers what a human
would read as text out of the added lines of the diff's code files, so that the
model detectors can read it again on its own, in windows of its own (besides every
raw window: coverage is still the raw bytes, all of them).

Kept simple and linear on purpose: one pass over the lines, comment syntax chosen by
the file's extension, no parser. Prose files (Markdown, text) are read as they are by
the raw windows and are not repeated here.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import lru_cache
from pathlib import PurePosixPath

from worker.core.diff import Spans, parse_diff

# Comment syntaxes by file extension (lower case, with the dot) or bare file name.
_HASH_NAMES = (
    ".py .pyw .pyi .pth .sh .bash .zsh .rb .pl .pm .r .yaml .yml .toml .cfg .ini .conf .mk .cmake .ps1 "
    ".psm1 .tf .nix .gemspec .rake .coffee .jl .ex .exs .nim .cr makefile dockerfile rakefile gemfile "
    "cmakelists.txt"
)
_SLASH_NAMES = (
    ".js .mjs .cjs .jsx .ts .tsx .mts .cts .go .java .kt .kts .scala .groovy .gradle .c .h .cc .cpp .cxx "
    ".hpp .hh .cs .rs .swift .m .mm .php .dart .proto .zig .v .sol .css .scss .less .vue .svelte"
)
_MARKUP_NAMES = ".html .htm .xml .xhtml .svg .vue .svelte .jsp .erb .hbs .njk .jinja .j2"
_HASH = frozenset(_HASH_NAMES.split())
_SLASH = frozenset(_SLASH_NAMES.split())
_MARKUP = frozenset(_MARKUP_NAMES.split())
_DOCSTRING = frozenset((".py", ".pyw", ".pyi"))

_LINE_HASH = re.compile(rb"(?:^|\s)#+!?\s?(.*)$")
_LINE_SLASH = re.compile(rb"(?:^|[^:\\/])//+!?\s?(.*)$")
_BLOCK_OPEN = re.compile(rb"/\*+!?\s?(.*)$")
_BLOCK_CLOSE = re.compile(rb"^(.*?)\*/")
_MARKUP_COMMENT = re.compile(rb"<!--(.*?)(?:-->|$)")
_BLOCK_LEAD = re.compile(rb"^\s*\*+\s?")
# String literals of one line, each alternative linear (no nested or lazy repetition): a minified
# line of a megabyte costs one pass. Written unrolled (plain characters, then escape + plain
# characters): the same matches as ``"(?:[^"\\\n]|\\.)*"`` at a third of the cost (one
# alternation per escape instead of per character). Which read like a sentence is decided in Python.
_STRING = re.compile(
    rb'"([^"\\\n]*(?:\\.[^"\\\n]*)*)"|\'([^\'\\\n]*(?:\\.[^\'\\\n]*)*)\'|`([^`\\\n]*(?:\\.[^`\\\n]*)*)`'
)
_LETTERS = re.compile(rb"[A-Za-z\x80-\xff]{2,}")
MIN_WORDS = 4  # a string literal of fewer words is an identifier, a key or a format, not prose
_TRIPLE = re.compile(rb'"""|\'\'\'')


@lru_cache(maxsize=4096)  # asked once per added run: a release's files, many times each
def _syntax(path: str) -> tuple[bool, bool, bool, bool]:
    """(hash comments, slash comments, markup comments, docstrings) of ``path``."""
    name = path.rpartition("/")[2]
    if name in ("", "."):  # pathlib's reading of a trailing slash or dot; plain strings otherwise
        name = PurePosixPath(path).name  # (two PurePosixPath per file were 2 % of real diffs)
    name = name.lower()
    dot = name.rfind(".")
    suffix = name[dot:] if 0 < dot < len(name) - 1 else ""  # PurePosixPath.suffix
    return (
        suffix in _HASH or name in _HASH,
        suffix in _SLASH,
        suffix in _MARKUP,
        suffix in _DOCSTRING,
    )


def diff_prose(data: bytes) -> bytes | bytearray:
    """The comments, docstrings and sentence-like string literals of the diff's added code lines,
    one fragment a line (``b""`` when ``data`` is no diff or adds none), as the buffer they were
    gathered in: :func:`prose_pieces` joined. Files, paths and added lines are the diff parser's
    (:func:`worker.core.diff.parse_diff`), as the pre-check reads them."""
    out = bytearray()
    for piece in prose_pieces(data):
        out += piece
    return out


def prose_pieces(data: bytes) -> Iterator[bytes]:
    """:func:`diff_prose` a piece at a time, in order (each fragment, and the newline between two),
    never held whole: a model reads the prose of a large diff in windows as it is produced
    (:class:`worker.core.views.Streamed`); gathered whole, it was 0.2 bytes per byte of the diff,
    twice that while its buffer grew."""
    first = True
    for fragment, _, _ in _fragments(data):
        if not first:
            yield b"\n"
        first = False
        yield fragment


def _fragments(data: bytes) -> Iterator[tuple[bytes, int, int]]:
    """Each fragment of :func:`diff_prose` (without the newlines between them), with the
    ``[start, stop)`` of the added line of ``data`` it was read from, as it is written there."""
    diff = parse_diff(data)
    if diff is None:
        return
    reader: _FileReader | None = None
    for run_start, run_end in _runs(diff.added):
        file = diff.file_at(run_start)
        if file is None:
            continue
        if reader is None or reader.start != file.start:  # runs come in order, a file's together
            reader = _FileReader(file.path, file.start)
        if not reader.reads_code:
            continue
        for start, stop in _lines(data, run_start, run_end):
            for fragment in reader.read(data[start + 1 : stop].rstrip(b"\r")):  # each starts with +
                if fragment := fragment.strip():
                    yield fragment, start, stop


def prose_raw_spans(data: bytes, spans: list[tuple[int, int]]) -> list[tuple[int, int] | None]:
    """Where each ``[start, end)`` of :func:`diff_prose` lies in ``data``, first byte to last (the
    lines between its fragments included), as a diff's added view names its windows; ``None``
    for a span past the prose's end. One pass over the diff's prose, up to the furthest span."""
    out: list[tuple[int, int] | None] = [None] * len(spans)
    furthest = max((end for _, end in spans), default=0)
    at = 0  # where the fragment begins in the prose
    for fragment, line_start, line_stop in _fragments(data):
        if at >= furthest:
            break
        end = at + len(fragment)
        if overlapped := [index for index, (start, stop) in enumerate(spans) if at < stop and start < end]:
            raw = data.find(fragment, line_start, line_stop)  # found: a fragment is a piece of its line
            raw = line_start if raw < 0 else raw
            for index in overlapped:
                start, stop = spans[index]
                lo, hi = raw + max(0, start - at), raw + min(len(fragment), stop - at)
                found = out[index]
                out[index] = (lo, hi) if found is None else (found[0], hi)
        at = end + 1  # and the newline between two fragments
    return out


def _runs(spans: Spans, block: int = 4096) -> Iterator[tuple[int, int]]:
    """The rows of ``spans`` as ``(start, end)``, a block at a time: the added runs of a 100 MB
    diff as one list of tuples were 12 MB."""
    for at in range(0, len(spans), block):
        yield from spans[at : at + block].tolist()


def _lines(data: bytes, start: int, end: int) -> Iterator[tuple[int, int]]:
    """``[start, stop)`` of each line of ``data[start:end]``, one at a time (never all lines of a
    large diff at once)."""
    while start < end:
        stop = data.find(b"\n", start, end)
        stop = end if stop < 0 else stop
        yield start, stop
        start = stop + 1


class _FileReader:
    """The prose of one file's added lines, read in order (block comments and docstrings span lines)."""

    def __init__(self, path: str, start: int) -> None:
        self.start = start  # where the file's section of the diff begins
        self.hashes, self.slashes, self.markup, self.docstrings = _syntax(path)
        self.reads_code = self.hashes or self.slashes or self.markup
        self.open: bytes | None = None  # the closing token of a comment or docstring left open

    def read(self, line: bytes) -> list[bytes]:
        if self.open is not None:
            return [self._continue(line)]
        out: list[bytes] = []
        # each syntax is tried only on a line holding its token: a substring test costs far less
        # than a regex search, and most code lines hold no comment and no string
        if (
            self.docstrings
            and (b'"""' in line or b"'''" in line)
            and (docstring := self._docstring(line, out)) is not None
        ):
            return [docstring]
        if self.markup and b"<!--" in line:
            for match in _MARKUP_COMMENT.finditer(line):
                out.append(match.group(1))
                self.open = None if match.group(0).endswith(b"-->") else b"-->"
        if self.slashes and b"/" in line:
            out.extend(self._slash_comment(line))
        if self.hashes and b"#" in line and (comment := _LINE_HASH.search(line)) is not None:
            out.append(comment.group(1))
        if b'"' in line or b"'" in line or b"`" in line:
            out.extend(_sentences(line))
        return out

    def _continue(self, line: bytes) -> bytes:
        """A line inside an open block comment or docstring: its text up to the closing token."""
        assert self.open is not None
        end = line.find(self.open)
        text = line if end < 0 else line[:end]
        if self.open == b"*/":
            text = _BLOCK_LEAD.sub(b"", text)
        if end >= 0:
            self.open = None
        return text

    def _docstring(self, line: bytes, out: list[bytes]) -> bytes | None:
        """The text after a triple quote that opens a docstring on ``line`` (None if none opens);
        one-line triple-quoted texts go to ``out``."""
        quotes = _TRIPLE.findall(line)
        if len(quotes) % 2 == 1:
            start = _TRIPLE.search(line)
            assert start is not None
            self.open = start.group(0)
            return line[start.end() :]
        out.extend(_between_triples(line))
        return None

    def _slash_comment(self, line: bytes) -> list[bytes]:
        block = _BLOCK_OPEN.search(line)
        if block is not None:
            closed = _BLOCK_CLOSE.match(block.group(1))
            self.open = None if closed else b"*/"
            return [closed.group(1) if closed else block.group(1)]
        comment = _LINE_SLASH.search(line)
        return [] if comment is None else [comment.group(1)]


def _sentences(line: bytes) -> list[bytes]:
    """The string literals of ``line`` that read like a sentence (at least ``MIN_WORDS`` words, with letters)."""
    return [line[start:end] for start, end in sentence_spans(line)]


def sentence_spans(text: bytes, start: int = 0, end: int | None = None) -> Iterator[tuple[int, int]]:
    """``[start, end)`` of the content of each one-line string literal of ``text`` that reads like a
    sentence (the pre-check reads these as prose: an order to an AI in a string constant is one).

    With ``start`` and ``end``, those of ``text[start:end]``, at their offsets in ``text`` (the
    pattern has no lookbehind and ends at ``\\Z``: ``re`` reads the bounds as the text's ends)."""
    for match in _SENTENCE.finditer(text, start, len(text) if end is None else end):
        if match.lastindex:
            yield match.span(match.lastindex)


def _sentence_pattern() -> re.Pattern[bytes]:
    """The literals of :data:`_STRING`, in the same order, of which only those that read like a
    sentence (``MIN_WORDS`` words, two letters in a row) are captured: the others are skipped
    inside the regex (most literals in code are keys and names, and testing each in Python was a
    third of the time the prose layer took).

    From where a search starts the pattern reads, without backtracking, the tokens ``finditer``
    of :data:`_STRING` would: a literal, a quote that opens none, or a run of other bytes. It
    stops at the first literal that is a sentence (captured) or at the end (nothing captured).
    """

    def parts(quote: bytes) -> tuple[bytes, bytes, bytes]:
        q = re.escape(quote)
        content = rb"[^%s\\\n]*+(?:\\.[^%s\\\n]*+)*+" % (q, q)
        plain = rb"[^%s\\\n ]*+(?:\\[^\n ][^%s\\\n ]*+)*+" % (q, q)  # no space, escaped or not
        words = plain + (rb"(?: |\\ )" + plain) * (MIN_WORDS - 1)
        letters = rb"(?:[^%s\\\n]|\\.)*?\\?[A-Za-z\x80-\xff]{2}" % q  # may start in an escape
        sentence = rb"(?=%s)(?=%s)" % (words, letters)
        return (
            rb"%s(?!%s)%s%s" % (q, sentence, content, q),  # a literal that is no sentence
            rb"%s(?!%s%s)" % (q, content, q),  # a quote that opens no literal
            rb"%s%s(%s)%s" % (q, sentence, content, q),  # a sentence: its content captured
        )

    quoted = [parts(quote) for quote in (b'"', b"'", b"`")]
    skip = b"|".join([rb"[^\"'`]+", *(p[0] for p in quoted), *(p[1] for p in quoted)])
    return re.compile(rb"(?>%s)*+(?:%s|\Z)" % (skip, b"|".join(p[2] for p in quoted)))


_SENTENCE = _sentence_pattern()


def is_code(path: str) -> bool:
    """Whether ``path`` is a code file (comment syntax known, not markup) by its name."""
    hashes, slashes, _, _ = _syntax(path)
    return hashes or slashes


def _between_triples(line: bytes) -> list[bytes]:
    """The text between each pair of triple quotes on one line."""
    parts = _TRIPLE.split(line)
    return parts[1::2]
