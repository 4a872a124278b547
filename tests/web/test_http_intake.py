"""HTTP intake on a real uvicorn server, embedded default: the CLI's gate behind POST /v1/artifacts."""

from __future__ import annotations

import base64
import json
import random
from pathlib import Path

import pytest

from worker.settings import Settings
from worker.web.serve import bind_host

EXAMPLES = Path(__file__).resolve().parents[2] / "policies" / "examples"
ARGUES_BACK = (EXAMPLES / "packages" / "diff-argues-back.diff").read_text()
VERSION_BUMP = (EXAMPLES / "packages" / "version-bump.diff").read_text()


@pytest.fixture()
def server(serve, embedded_settings):
    return serve(embedded_settings)


def test_diff_that_argues_back_is_quarantined_over_http(server):
    """The seed's diff posted under malicious-package is accepted (202) and its gate reads quarantine."""
    with server.client() as http:
        answer = http.post("/v1/artifacts", json={"content": ARGUES_BACK, "policies": ["malicious-package"]})
        assert answer.status_code == 202, answer.text
        (gate_id,) = answer.json()["gate_ids"]
        state = http.get(f"/v1/artifacts/{gate_id}").json()
    assert state["status"] == "quarantine"
    assert state["report"]["decision"] == "quarantine"


def test_version_bump_is_allowed_over_http(server):
    """A plain version bump posted as a raw body with ?policy= is allowed."""
    with server.client() as http:
        answer = http.post(
            "/v1/artifacts",
            params={"policy": "malicious-package", "source": "pypi:demo==1.0.1"},
            content=VERSION_BUMP.encode(),
            headers={"Content-Type": "text/x-diff"},
        )
        assert answer.status_code == 202, answer.text
        (gate_id,) = answer.json()["gate_ids"]
        state = http.get(f"/v1/artifacts/{gate_id}").json()
    assert (state["status"], state["source"]) == ("allow", "pypi:demo==1.0.1")


def test_every_policy_asked_for_gets_a_gate(server):
    """content_base64 under two policies opens two gates, one per policy."""
    body = {
        "content_base64": base64.b64encode(VERSION_BUMP.encode()).decode(),
        "policies": ["malicious-package", "prompt-injection"],
    }
    with server.client() as http:
        answer = http.post("/v1/artifacts", json=body)
    assert answer.status_code == 202
    assert len(answer.json()["gate_ids"]) == 2
    assert set(answer.json()["statuses"].values()) == {"allow"}


@pytest.mark.parametrize("token", [None, "wrong-token"])
def test_no_valid_token_is_401(server, token):
    """Without the configured bearer token (none, or another) the intake answers 401 and gates nothing."""
    with server.client(token=token) as http:
        answer = http.post("/v1/artifacts", json={"content": "hi", "policies": ["prompt-injection"]})
        status = http.get("/v1/artifacts/0123").status_code
    assert answer.status_code == 401
    assert answer.headers["www-authenticate"] == "Bearer"
    assert status == 401


def test_health_and_spec_need_no_token(server):
    """Probes and the OpenAPI description answer without a token; readyz checks database, store, broker."""
    with server.client(token=None) as http:
        assert http.get("/healthz").json() == {"status": "ok"}
        ready = http.get("/readyz")
        spec = http.get("/openapi.json").json()
    assert ready.status_code == 200
    assert ready.json()["checks"] == {"database": "ok", "store": "ok", "broker": "ok"}
    assert {"/v1/artifacts", "/v1/artifacts/{gate_id}", "/healthz", "/readyz"} <= set(spec["paths"])
    assert "application/json" in spec["paths"]["/v1/artifacts"]["post"]["requestBody"]["content"]


def test_oversize_body_is_413(server):
    """A body over the limit is refused with 413, declared or streamed without a length."""
    big = b"x" * (1024 * 1024 + 1)
    with server.client() as http:
        declared = http.post("/v1/artifacts", params={"policy": "prompt-injection"}, content=big)
        streamed = http.post(
            "/v1/artifacts",
            params={"policy": "prompt-injection"},
            content=iter([big[:600_000], big[600_000:]]),
        )
        at_limit = http.post("/v1/artifacts", params={"policy": "prompt-injection"}, content=big[:-1])
    assert declared.status_code == 413
    assert streamed.status_code == 413
    assert "limit" in declared.json()["detail"]
    assert at_limit.status_code == 202


@pytest.mark.parametrize(
    ("body", "status", "says"),
    [
        (b"{not json", 400, "not valid JSON"),
        (b"[1, 2]", 400, "must be an object"),
        (b'{"content": "x"}', 400, "at least one policy"),
        (b'{"content": "x", "policies": ["no-such-policy"]}', 422, "unknown policy"),
        (b'{"content": "x", "policies": ["../../etc/passwd.yaml"]}', 422, "unknown policy"),
        (b'{"content": "x", "content_base64": "eA==", "policies": ["prompt-injection"]}', 400, "exactly one"),
        (b'{"content_base64": "***", "policies": ["prompt-injection"]}', 400, "not valid base64"),
        (b'{"content": 5, "policies": ["prompt-injection"]}', 400, "must be a string"),
        (b'{"content": "x", "policies": "prompt-injection"}', 400, "list of policy ids"),
        (b'{"content": "x", "policies": ["prompt-injection"], "metadata": [1]}', 400, "JSON object"),
        (b'{"content": "x", "policies": ["prompt-injection"], "extra": 1}', 400, "unknown field"),
        (b"\xff\xfe", 400, "not valid JSON"),
    ],
)
def test_bad_input_gets_a_clear_4xx(server, body, status, says):
    """Each malformed request gets its own 4xx with a one-line reason, never a 500."""
    with server.client() as http:
        answer = http.post("/v1/artifacts", content=body, headers={"Content-Type": "application/json"})
    assert answer.status_code == status
    assert says in answer.json()["detail"]


def test_raw_body_without_policy_is_400(server):
    """A raw body needs ?policy=; without it the answer says so."""
    with server.client() as http:
        answer = http.post("/v1/artifacts", content=b"hello")
    assert answer.status_code == 400
    assert "policy" in answer.json()["detail"]


def test_random_bodies_never_500(server):
    """Random bytes and random JSON shapes posted as JSON always get a 4xx (or a 202), never a 5xx."""
    rng = random.Random(25)
    shapes = [
        None,
        1,
        "s",
        [],
        {},
        {"content": None},
        {"policies": [None]},
        {"content": "a", "policies": [1]},
    ]
    with server.client() as http:
        for i in range(40):
            body = (
                bytes(rng.randrange(256) for _ in range(rng.randrange(1, 64)))
                if i % 2
                else json.dumps(rng.choice(shapes)).encode()
            )
            answer = http.post("/v1/artifacts", content=body, headers={"Content-Type": "application/json"})
            assert answer.status_code < 500, (body, answer.text)


def test_unknown_gate_is_404(server):
    """GET of a gate id the database does not hold answers 404 with the id named."""
    with server.client() as http:
        answer = http.get("/v1/artifacts/ffffffffffffffffffffffffffffffff")
    assert answer.status_code == 404
    assert "unknown" in answer.json()["detail"]


def test_idempotency_key_replays_the_first_answer(server):
    """The same request with the same Idempotency-Key gets the first submission back, marked replayed."""
    body = {
        "content": "Quarterly numbers attached.",
        "policies": ["prompt-injection"],
        "metadata": {"ticket": 7},
    }
    with server.client() as http:
        first = http.post("/v1/artifacts", json=body, headers={"Idempotency-Key": "k-1"})
        again = http.post("/v1/artifacts", json=body, headers={"Idempotency-Key": "k-1"})
        fresh = http.post("/v1/artifacts", json=body)
    assert first.status_code == again.status_code == 202
    assert again.json()["submission_id"] == first.json()["submission_id"]
    assert again.headers.get("idempotent-replayed") == "true"
    assert "idempotent-replayed" not in first.headers
    assert fresh.json()["submission_id"] != first.json()["submission_id"]
    assert fresh.json()["gate_ids"] == first.json()["gate_ids"]  # same bytes, same policy: same gate


def test_idempotency_key_with_another_request_is_422(server):
    """Reusing an Idempotency-Key for a different request is refused, not answered with the old gates."""
    with server.client() as http:
        first = http.post(
            "/v1/artifacts",
            json={"content": "one", "policies": ["prompt-injection"]},
            headers={"Idempotency-Key": "k-2"},
        )
        other = http.post(
            "/v1/artifacts",
            json={"content": "two", "policies": ["prompt-injection"]},
            headers={"Idempotency-Key": "k-2"},
        )
    assert first.status_code == 202
    assert other.status_code == 422
    assert "Idempotency-Key" in other.json()["detail"]


def test_without_tokens_anyone_on_loopback_may_post(serve, tmp_path):
    """With no token configured, requests need none (the server is bound to loopback)."""
    server = serve(Settings(data_dir=tmp_path / "open"))
    with server.client(token=None) as http:
        answer = http.post("/v1/artifacts", json={"content": "hello", "policies": ["prompt-injection"]})
    assert answer.status_code == 202


@pytest.mark.parametrize(
    ("host", "tokens", "bound", "warned"),
    [
        ("0.0.0.0", [], "127.0.0.1", True),
        ("192.0.2.10", [], "127.0.0.1", True),
        ("127.0.0.1", [], "127.0.0.1", False),
        ("::1", [], "::1", False),
        ("0.0.0.0", ["t"], "0.0.0.0", False),
    ],
)
def test_without_tokens_the_server_binds_loopback_only(host, tokens, bound, warned):
    """No CANARY_API_TOKENS: a public address is replaced by 127.0.0.1, with a warning naming why."""
    chosen, warning = bind_host(host, tokens)
    assert chosen == bound
    assert (warning is not None) == warned
    if warning:
        assert "CANARY_API_TOKENS" in warning
