"""The slow twins of the pre-check's newer fast paths, and their own properties.

The start search from a rule's longest match (not MAX_MATCH bytes before Hyperscan's end) and the
integrity-hash batch that searches each hash prefix first: each has an obviously-correct twin here,
which ``test_precheck_fast_paths.slow_paths`` also swaps in for the end-to-end property.
"""

from __future__ import annotations

import base64
from functools import cache
from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import worker.core.decode as decode
import worker.core.literals as literals
import worker.core.payloads as payloads
from worker.core.ruleset import MAX_MATCH, Matcher, Rule


def reference_search_from(self: Matcher, index: int, end: int) -> int:
    """The start search from MAX_MATCH bytes before the first match's end, whatever the rule."""
    return max(0, end - MAX_MATCH)


def reference_hash_runs(data: bytes, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Each run on its own: a hash prefix, the digest's exact length, a control byte once decoded."""
    genuine = []
    for start, end in zip(starts.tolist(), ends.tolist(), strict=True):
        run = data[start:end]
        found = False
        for prefix, digits in payloads._HASH_PREFIXES:
            if run.startswith(prefix) and len(run) == len(prefix) + digits:
                digest = (
                    run[len(prefix) : len(prefix) + digits - digits % 4]
                    .replace(b"-", b"+")
                    .replace(b"_", b"/")
                )
                found = any(b < 9 or 11 <= b < 32 or b == 127 for b in base64.b64decode(digest))
        genuine.append(found)
    return np.array(genuine, dtype=bool)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.sampled_from([p for p, _ in payloads._HASH_PREFIXES]),
            st.sampled_from([8, 19, 22, 27, 43, 64, 86]).map(lambda n: base64.b64encode(bytes(range(n)))[:n]),
            st.sampled_from([22, 27, 43, 86]).map(lambda n: base64.b64encode(b"plain words " * 8)[:n]),
            st.sampled_from([" ", "\n", "x", "sha"]).map(str.encode),
        ),
        max_size=10,
    ).map(b"".join)
)
def test_hash_runs_match_the_per_run_check(data):
    """Integrity hashes found in one batch, prefixes searched first, are the runs a per-run check finds."""
    arr = np.frombuffer(data, dtype=np.uint8)
    if len(data) < 20:
        return
    starts, ends = payloads._long_runs(payloads._in_base64_alphabet(arr), 20)
    assert (
        payloads._hash_runs(data, starts, ends).tolist() == reference_hash_runs(data, starts, ends).tolist()
    )


def reference_has_markup(data: bytes) -> bool:
    """Two closing tags or a comment, by a count and a search."""
    return data.count(b"</") >= 2 or b"<!--" in data


@settings(max_examples=400, deadline=None)
@given(
    st.lists(st.sampled_from([b"<", b"/", b"!", b"-", b"a", b"</", b"<!--", b" "]), max_size=24).map(b"".join)
)
def test_markup_gate_matches_the_count(data):
    """The one-pass markup gate says "markup" exactly where two closing tags or a comment are."""
    assert decode._has_markup(data) == reference_has_markup(data)


def test_a_hash_prefix_inside_a_longer_run_is_no_hash():
    """A run that holds a hash prefix past its start (found by the one-pass prefix search) is decoded,
    not taken for an integrity hash; the hash at a run's start is."""
    digest = base64.b64encode(bytes(range(64)))[:86]
    data = b"xsha512-" + digest + b" sha512-" + digest
    starts, ends = payloads._long_runs(payloads._in_base64_alphabet(np.frombuffer(data, dtype=np.uint8)), 20)
    assert payloads._hash_runs(data, starts, ends).tolist() == [False, True]
    assert reference_hash_runs(data, starts, ends).tolist() == [False, True]


REACH_PATTERNS = ["a b", "`[^`\n]{2,20}`", r"\(x\)|a{2,9}b", r"\ba[^ ]{0,12}b", "x+a", "(?:ab ?){2,40}"]


@cache
def reach_matcher(pattern: str) -> Matcher:
    """One compiled Hyperscan matcher per pattern (compiling per example would dominate the test)."""
    return Matcher(
        [Rule(id="t.reach", description="d", weight=1.0, pattern=pattern, lines=True)], "hyperscan"
    )


@pytest.mark.skipif(literals.hyperscan is None, reason="hyperscan is not installed")
@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="ab \n`'\"x()", max_size=300).map(str.encode), st.sampled_from(REACH_PATTERNS))
def test_the_start_search_from_a_rules_longest_match_finds_what_a_longer_one_finds(data, pattern):
    """A rule's match, searched from its longest match before where Hyperscan says the first one ends,
    is the one searched from MAX_MATCH bytes before."""
    matcher = reach_matcher(pattern)
    fast = list(matcher.scan(data, data))
    with mock.patch.object(Matcher, "_search_from", reference_search_from):
        assert list(matcher.scan(data, data)) == fast


def test_a_rules_longest_match_bounds_its_start_search():
    """Bounded patterns search back their longest match; unbounded ones MAX_MATCH."""
    reach = [
        Matcher([Rule(id="t.w", description="d", weight=1.0, pattern=p)], engine="re")._search_from(0, 10_000)
        for p in ["abc", "a{2,5}|xyz", "a+", "(?:ab){1,300}"]
    ]
    assert reach == [10_000 - 3, 10_000 - 5, 10_000 - MAX_MATCH, 10_000 - 600]
