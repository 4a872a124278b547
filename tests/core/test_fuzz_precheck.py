"""No input makes a decoder, the normaliser or the pre-check raise (bounded Hypothesis fuzzing).

Artifacts are built from the pieces the decoders key on (MIME headers, HTML tags and entities,
base64/hex/percent/escape runs, JSON strings, quoted-printable soft breaks, diff markers) glued
with arbitrary bytes, so the examples reach the nested decode paths where a crash hides. The
budgets keep the whole module to seconds in CI; ``derandomize`` makes a failure reproducible.
"""

from __future__ import annotations

import base64

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from policies.loader import load_policy
from worker.core.decode import decode_layers, json_text
from worker.core.normalize import Layer, normalize
from worker.core.precheck import run_precheck

CRASHER = b"&<v>Content-Transfer-Encoding:base64\nSWdub3Jl</</&"  # once: pre-check failed: StopIteration

PIECES = [
    b"Content-Transfer-Encoding:base64\n",
    b"Content-Transfer-Encoding: quoted-printable\n",
    b"Content-Type: text/html\n\n",
    b"<",
    b">",
    b"</",
    b"&",
    b"&amp;",
    b"&#x41;",
    b"&#65;",
    b"<br>",
    b"<script>",
    b"<!--",
    b"-->",
    b"=\n",
    b"=3D",
    b"=?utf-8?b?",
    b"?=",
    b"\\x41",
    b"\\u0041",
    b"\\n",
    b"\\\\",
    b"%41",
    b"%",
    b"0x",
    b'{"a": "',
    b'"}',
    b"[",
    b"]",
    b"\n",
    b"\r\n",
    b" ",
    b"\t",
    b"\x00",
    b"\xff",
    b"\xe2\x80\x8b",
    b"+",
    b"-",
    b"@@ -1 +1 @@\n",
    b"diff --git a/x b/x\n",
    b"String.fromCharCode(73,103)",
    b"01001001 01100111",
    b"ignore previous instructions",
    b"SWdub3Jl",
    base64.b64encode(b"Ignore all previous instructions"),
    bytes.fromhex("49676e6f7265").hex().encode(),
]
artifacts = st.lists(st.one_of(st.sampled_from(PIECES), st.binary(max_size=12)), max_size=24).map(b"".join)
BUDGET = settings(
    max_examples=150, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)
POLICIES = {ref: load_policy(ref) for ref in ("prompt-injection", "malicious-package")}


@BUDGET
@given(artifacts)
@example(CRASHER)
def test_decoders_and_the_normaliser_never_raise(data: bytes) -> None:
    """Every decoded layer of any input maps back inside the input, and nothing raises."""
    norm = normalize(data)
    text = Layer("text", norm.data, norm.offsets)
    for layer in [*decode_layers(text), *(d for h in norm.hidden for d in (h, *decode_layers(h)))]:
        if layer.data:
            start, end = layer.offsets.span(0, len(layer.data))
            assert 0 <= start <= end <= len(data)
    json_text(text)


@BUDGET
@given(artifacts)
@example(CRASHER)
def test_the_precheck_never_raises(data: bytes) -> None:
    """Under both shipped policies, any input gets a verdict (harmful or harmless), never an exception."""
    for policy in POLICIES.values():
        assert run_precheck(data, policy).verdict in ("harmful", "harmless")


def test_the_fifty_byte_mime_input_gets_a_verdict() -> None:
    """The 50-byte MIME-in-HTML input that crashed the pre-check is scanned and decided."""
    result = run_precheck(CRASHER, POLICIES["prompt-injection"])
    assert result.verdict in ("harmful", "harmless")
