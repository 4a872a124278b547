"""A git-style unified diff over every file of two releases, by patience diff."""

from __future__ import annotations

import bisect
import difflib
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence


def _text(content: bytes) -> list[str] | None:
    if b"\0" in content[:8192]:
        return None
    try:
        return content.decode("utf-8").splitlines(keepends=True)
    except UnicodeDecodeError:
        return None


def _matching_blocks(a: Sequence[str], b: Sequence[str]) -> list[tuple[int, int, int]]:
    """Patience diff: common ends trimmed, lines unique to both sides anchor, the rest recurses.

    Linear-ish on the large regenerated files releases are full of, where
    difflib's matcher is quadratic; difflib is only used for gaps without a
    unique common line.
    """
    runs: list[tuple[int, int, int]] = []  # (i, j, size): a[i:i+size] == b[j:j+size]
    todo = [(0, len(a), 0, len(b))]
    while todo:
        alo, ahi, blo, bhi = todo.pop()
        start = alo
        while alo < ahi and blo < bhi and a[alo] == b[blo]:
            alo, blo = alo + 1, blo + 1
        if alo > start:
            runs.append((start, blo - (alo - start), alo - start))
        end = ahi
        while alo < ahi and blo < bhi and a[ahi - 1] == b[bhi - 1]:
            ahi, bhi = ahi - 1, bhi - 1
        if end > ahi:
            runs.append((ahi, bhi, end - ahi))
        if alo == ahi or blo == bhi:
            continue
        count_a = Counter(a[alo:ahi])
        count_b = Counter(b[blo:bhi])
        where_b = {line: j for j, line in enumerate(b[blo:bhi], blo) if count_b[line] == 1}
        pairs = [
            (i, where_b[line])
            for i, line in enumerate(a[alo:ahi], alo)
            if count_a[line] == 1 and line in where_b
        ]
        if not pairs:
            sm = difflib.SequenceMatcher(None, a[alo:ahi], b[blo:bhi], autojunk=False)
            runs.extend((alo + i, blo + j, size) for i, j, size in sm.get_matching_blocks() if size)
            continue
        anchors = _longest_increasing(pairs)
        pa, pb = alo, blo
        for i, j in anchors:
            todo.append((pa, i, pb, j))
            runs.append((i, j, 1))
            pa, pb = i + 1, j + 1
        todo.append((pa, ahi, pb, bhi))
    blocks: list[tuple[int, int, int]] = []
    for i, j, size in sorted(runs):
        if blocks and blocks[-1][0] + blocks[-1][2] == i and blocks[-1][1] + blocks[-1][2] == j:
            blocks[-1] = (blocks[-1][0], blocks[-1][1], blocks[-1][2] + size)
        else:
            blocks.append((i, j, size))
    blocks.append((len(a), len(b), 0))
    return blocks


def _longest_increasing(pairs: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The longest run of ``pairs`` (sorted by a-position) whose b-positions increase (patience sorting)."""
    tails: list[int] = []
    tail_at: list[int] = []
    back = [-1] * len(pairs)
    for n, (_, j) in enumerate(pairs):
        k = bisect.bisect_left(tails, j)
        if k == len(tails):
            tails.append(j)
            tail_at.append(n)
        else:
            tails[k], tail_at[k] = j, n
        back[n] = tail_at[k - 1] if k else -1
    run: list[tuple[int, int]] = []
    n = tail_at[-1]
    while n >= 0:
        run.append(pairs[n])
        n = back[n]
    return run[::-1]


class _PatienceMatcher(difflib.SequenceMatcher[str]):
    # Instance attributes difflib sets (set_seqs) that typeshed does not declare; annotations only.
    a: Sequence[str]
    b: Sequence[str]
    matching_blocks: list[difflib.Match] | None

    def _SequenceMatcher__chain_b(self) -> None:  # overrides difflib's private b-index builder
        """No index of ``b``: the patience matcher never uses difflib's ``b2j`` (it built one per file)."""

    def get_matching_blocks(self) -> list[difflib.Match]:
        if self.matching_blocks is None:
            self.matching_blocks = [difflib.Match(*m) for m in _matching_blocks(self.a, self.b)]
        return self.matching_blocks


def _range(start: int, stop: int) -> str:
    length = stop - start
    if length == 1:
        return str(start + 1)
    return f"{start + 1 if length else start},{length}"


def _hunks(a: list[str], b: list[str], name_a: str, name_b: str, context: int = 3) -> Iterator[str]:
    """``difflib.unified_diff``'s output, over the patience matcher."""
    for number, group in enumerate(_PatienceMatcher(None, a, b).get_grouped_opcodes(context)):
        if number == 0:
            yield f"--- {name_a}\n"
            yield f"+++ {name_b}\n"
        first, last = group[0], group[-1]
        yield f"@@ -{_range(first[1], last[2])} +{_range(first[3], last[4])} @@\n"
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                yield from (" " + line for line in a[i1:i2])
                continue
            if tag in ("replace", "delete"):
                yield from ("-" + line for line in a[i1:i2])
            if tag in ("replace", "insert"):
                yield from ("+" + line for line in b[j1:j2])


def unified_diff(old: Mapping[str, bytes], new: Mapping[str, bytes]) -> bytes:
    """One git-style diff over every changed file (sorted by path); binary files by name."""
    out: list[str] = []
    for path in sorted(set(old) | set(new)):
        before, after = old.get(path), new.get(path)
        if before == after:
            continue
        a = "/dev/null" if before is None else f"a/{path}"
        b = "/dev/null" if after is None else f"b/{path}"
        out.append(f"diff --git a/{path} b/{path}\n")
        if before is None:
            out.append("new file mode 100644\n")
        elif after is None:
            out.append("deleted file mode 100644\n")
        lines_a = [] if before is None else _text(before)
        lines_b = [] if after is None else _text(after)
        if lines_a is None or lines_b is None:
            out.append(f"Binary files {a} and {b} differ\n")
            continue
        for line in _hunks(lines_a, lines_b, a, b):
            out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(out).encode()
