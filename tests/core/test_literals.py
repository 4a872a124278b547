"""LiteralSet: which literals occur in a buffer, the same with Hyperscan as with bytes searches."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from worker.core import literals
from worker.core.literals import LiteralSet
from worker.core.payloads import _GATES

LITERALS = (b"ase64", b"\\", b"[", b" 0110", b"=\n", b"uoted-printable")

needs_hyperscan = pytest.mark.skipif(literals.hyperscan is None, reason="hyperscan is not installed")


@pytest.mark.parametrize("use_hyperscan", [pytest.param(True, marks=needs_hyperscan), False])
def test_each_literal_present_is_reported_and_no_other(use_hyperscan):
    """Each literal that occurs is reported, no other, and an empty buffer has none."""
    found = LiteralSet(LITERALS, use_hyperscan=use_hyperscan)
    data = b"Content-Transfer-Encoding: quoted-printable\nsoft=\nbreak and a \\u0041 escape"
    assert found.present(data) == {b"=\n", b"uoted-printable", b"\\"}
    assert found.present(b"") == frozenset()
    assert found.present(b"nothing here") == frozenset()


@needs_hyperscan
@given(st.lists(st.sampled_from([*LITERALS, b"a", b"=", b"\n", b" 01", b"10", b"uoted"]), max_size=40))
def test_one_pass_agrees_with_searching_each_literal(pieces):
    """One Hyperscan pass finds exactly the literals ``literal in data`` finds."""
    # Literals cut across piece boundaries, at the ends, repeated.
    data = b"".join(pieces)
    assert LiteralSet(LITERALS).present(data) == {lit for lit in LITERALS if lit in data}


def test_the_decoders_gates_are_the_literals_it_asks_about():
    """Every literal the decoder gates on is in its set (a missing one would never be reported)."""
    assert set(_GATES.literals) >= {b"ase64", b"\\", b"fromCharCode", b"[", b" 0110", b"=\n"}


@pytest.mark.parametrize("use_hyperscan", [pytest.param(True, marks=needs_hyperscan), False])
@given(
    st.lists(
        st.sampled_from(
            [
                b"content-",
                b"CONTENT-",
                b"Transfer-",
                b"transfer-",
                b"encoding:",
                b"ENCODING:",
                b"x",
                b"-",
                b"\n",
            ]
        ),
        max_size=12,
    )
)
def test_a_caseless_set_finds_what_a_caseless_regex_finds(use_hyperscan, pieces):
    """A caseless set reports a literal in any mix of cases, as ``re.IGNORECASE`` finds it, and no other."""
    data = b"".join(pieces)
    literal = b"content-transfer-encoding:"
    found = LiteralSet((literal,), use_hyperscan=use_hyperscan, caseless=True).present(data)
    assert found == ({literal} if re.search(re.escape(literal), data, re.IGNORECASE) else set())


def test_a_caseless_set_is_not_fooled_by_a_near_miss():
    """A header cut short or spelled otherwise is not reported."""
    gate = LiteralSet((b"content-transfer-encoding:",), caseless=True)
    assert gate.present(b"Content-Transfer-Encoding: base64") == {b"content-transfer-encoding:"}
    assert gate.present(b"Content-Transfer-Encodin: base64\ncontent_transfer_encoding:") == frozenset()
