"""HTTP intake (``canary serve``): the CLI's intake behind ``POST /v1/artifacts``.

    POST /v1/artifacts           JSON {content | content_base64, policies, source, metadata}, or a
                                 raw body with ?policy= (repeatable); Idempotency-Key honoured;
                                 202 {submission_id, gate_ids}
    GET  /v1/artifacts/{gate_id} status, decision, reason and report of one gate
    GET  /healthz                the process answers
    GET  /readyz                 database, object store and broker reachable (503 otherwise)
    GET  /openapi.json           all of the above

The same code path as ``canary scan``/``submit`` (``worker.pipeline.intake``): with the embedded
default the gate runs in-process before the answer; with a broker the gate rows are written and
the pre-check enqueued. Bearer tokens come from ``CANARY_API_TOKENS`` and are compared in constant
time; bad input always gets a 4xx with a one-line ``detail``, never a 500.
"""

from __future__ import annotations

import hmac
import json
import threading
from collections.abc import Callable
from typing import Annotated, Any

import structlog
from fastapi import Depends, FastAPI, Header, Query, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel

from worker.adapters.db import Gate
from worker.core.errors import UsageError
from worker.pipeline.intake import Submitted, submit_artifact
from worker.pipeline.runtime import Runtime, build_runtime
from worker.settings import Settings
from worker.web.body import BadRequestError, parse_request
from worker.web.idempotency import MAX_KEY_CHARS, Answer, IntakeKeys, KeyReusedError, scoped_key

log = structlog.get_logger("canary.http")


class Accepted(BaseModel):
    submission_id: str
    gate_ids: list[str]
    statuses: dict[str, str]


class GateState(BaseModel):
    gate_id: str
    policy: str
    status: str
    decision: str | None
    reason: str | None
    sha256: str
    size: int
    source: str
    report: dict[str, Any] | None


class Problem(BaseModel):
    detail: str


class Gatekeeper:
    """Submits artifacts the way the CLI does: in-process (embedded) or to the broker."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._lock = threading.Lock()
        self._submit: Callable[[bytes, list[str], str], Submitted]
        if settings.embedded:
            from worker.tasks.embedded import EmbeddedGate

            embedded = EmbeddedGate(settings)
            self.rt: Runtime = embedded.rt
            self._submit = embedded.submit
            self.broker = "embedded (in-process)"
        else:
            from worker.tasks.app import create_app

            celery_app = create_app(settings, eager=False)
            self.rt = build_runtime(settings, role="http")
            self.broker = settings.require_broker()

            def enqueue(gate_id: str) -> None:
                celery_app.send_task("canary.precheck", (gate_id,), ignore_result=True)

            self._submit = lambda data, policies, source: submit_artifact(
                self.rt, data, policies, enqueue, source
            )
        self.keys = IntakeKeys(self.rt.repo.engine)

    def submit(self, data: bytes, policies: list[str], source: str) -> Submitted:
        if self.settings.embedded:
            with self._lock:  # one in-process gate at a time: the eager task graph is not reentrant
                return self._submit(data, policies, source)
        return self._submit(data, policies, source)

    def readiness(self) -> dict[str, str]:
        """``ok`` or a one-line reason per dependency."""
        checks: dict[str, str] = {}
        checks["database"] = _probe(lambda: _select_one(self.rt))
        checks["store"] = _probe(lambda: self.rt.store.exists("readyz/probe"))
        if self.settings.embedded:
            checks["broker"] = "ok"
        else:
            checks["broker"] = _probe(lambda: _broker_answers(self.broker))
        return checks


def _select_one(rt: Runtime) -> None:
    rt.repo.ping()


def _broker_answers(url: str) -> None:
    from kombu.connection import Connection

    with Connection(url, connect_timeout=2) as conn:  # type: ignore[no-untyped-call]
        conn.ensure_connection(max_retries=1, timeout=2)


def _probe(check: Callable[[], object]) -> str:
    try:
        check()
    except Exception as exc:  # noqa: BLE001 - a readiness probe reports, never raises
        return f"unreachable: {type(exc).__name__}"
    return "ok"


def _problem(status: int, detail: str, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"detail": detail}, status_code=status, headers=headers)


class UnauthorizedError(UsageError):
    """The request carries no token the server accepts."""


def token_matches(given: str, tokens: list[str]) -> bool:
    """Constant time in the token's content: every configured token is compared, always."""
    found = False
    for token in tokens:
        found |= hmac.compare_digest(given.encode(), token.encode())
    return found


async def _read_limited(request: Request, limit: int) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise BadRequestError(f"the body is over the {limit}-byte limit", 413)
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise BadRequestError(f"the body is over the {limit}-byte limit", 413)
        chunks.append(chunk)
    return b"".join(chunks)


def caller(request: Request, authorization: Annotated[str | None, Header()] = None) -> str:
    """The caller's token (its idempotency-key scope); "" when the server has no tokens."""
    tokens: list[str] = request.app.state.tokens
    if not tokens:
        return ""
    scheme, _, given = (authorization or "").partition(" ")
    if scheme.lower() != "bearer" or not token_matches(given.strip(), tokens):
        raise UnauthorizedError
    return given.strip()


Caller = Annotated[str, Depends(caller)]


ARTIFACT_BODY = {
    "requestBody": {
        "required": True,
        "content": {
            "application/json": {
                "schema": {
                    "type": "object",
                    "additionalProperties": False,
                    "properties": {
                        "content": {"type": "string", "description": "the artifact as text"},
                        "content_base64": {"type": "string", "description": "the artifact's bytes"},
                        "policies": {"type": "array", "items": {"type": "string"}},
                        "source": {"type": "string", "maxLength": 255},
                        "metadata": {"type": "object"},
                    },
                }
            },
            "application/octet-stream": {"schema": {"type": "string", "format": "binary"}},
        },
    }
}


def create_intake_app(settings: Settings, keeper: Gatekeeper | None = None) -> FastAPI:
    """The intake app. ``keeper`` defaults to one built from ``settings``."""
    gk = keeper or Gatekeeper(settings)
    app = FastAPI(
        title="Canary Gate intake",
        version="1",
        description="Submit untrusted artifacts to the gate; read their decisions.",
        docs_url=None,
        redoc_url=None,
    )
    app.state.tokens = settings.api_token_list

    @app.exception_handler(BadRequestError)
    async def _bad_request(_: Request, exc: BadRequestError) -> JSONResponse:
        return _problem(exc.status, exc.message)

    @app.exception_handler(UnauthorizedError)
    async def _unauthorized(_: Request, exc: UnauthorizedError) -> JSONResponse:
        return _problem(401, "a valid bearer token is required", {"WWW-Authenticate": "Bearer"})

    @app.post(
        "/v1/artifacts",
        status_code=202,
        response_model=Accepted,
        responses={
            400: {"model": Problem},
            401: {"model": Problem},
            413: {"model": Problem},
            422: {"model": Problem},
        },
        openapi_extra=ARTIFACT_BODY,
    )
    async def post_artifact(
        request: Request,
        scope: Caller,
        policy: Annotated[list[str] | None, Query(description="Policy id (raw bodies); repeatable.")] = None,
        source: Annotated[str, Query(description="Where the artifact came from (raw bodies).")] = "",
        idempotency_key: Annotated[str | None, Header(max_length=MAX_KEY_CHARS)] = None,
    ) -> JSONResponse:
        body = await _read_limited(request, settings.max_request_bytes)
        wanted = parse_request(body, request.headers.get("content-type", ""), policy or [], source)
        from starlette.concurrency import run_in_threadpool

        answer = await run_in_threadpool(_accept, gk, wanted, scope, idempotency_key)
        return JSONResponse(
            answer,
            status_code=202,
            headers={"Idempotent-Replayed": "true"} if answer.pop("replayed") else None,
        )

    @app.get("/v1/artifacts/{gate_id}", response_model=GateState, responses={404: {"model": Problem}})
    def get_artifact(gate_id: str, _: Caller) -> Any:
        gate = gk.rt.repo.get(gate_id) if len(gate_id) <= 32 else None
        if gate is None:
            return _problem(404, f"gate {gate_id[:40]} is unknown")
        return _state(gate)

    @app.get("/healthz")
    def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/readyz", responses={503: {"description": "a dependency is unreachable"}})
    def readyz() -> JSONResponse:
        checks = gk.readiness()
        ready = all(v == "ok" for v in checks.values())
        return JSONResponse({"ready": ready, "checks": checks}, status_code=200 if ready else 503)

    return app


def _accept(gk: Gatekeeper, wanted: Any, scope: str, idempotency_key: str | None) -> dict[str, Any]:
    key = scoped_key(scope, idempotency_key) if idempotency_key else None
    fingerprint = wanted.fingerprint()
    if key is not None:
        try:
            found = gk.keys.find(key, fingerprint)
        except KeyReusedError:
            raise BadRequestError("this Idempotency-Key was used with a different request", 422) from None
        if found is not None:
            return _answer(gk, found)
    submitted = gk.submit(wanted.data, wanted.policies, wanted.source)
    answer = Answer(submitted.submission.id, [g.id for g in submitted.gates])
    if wanted.metadata:
        actor = f"http:{gk.rt.actor}"
        detail = json.dumps(wanted.metadata, sort_keys=True)
        for gate_id in answer.gate_ids:
            _audit_metadata(gk.rt, gate_id, actor, detail)
    if key is not None:
        answer = gk.keys.remember(key, fingerprint, answer, json.dumps(wanted.metadata))
    log.info(
        "http_intake",
        submission_id=answer.submission_id,
        gates=len(answer.gate_ids),
        policies=wanted.policies,
    )
    return _answer(gk, answer)


def _audit_metadata(rt: Runtime, gate_id: str, actor: str, detail: str) -> None:
    rt.repo.add_audit([(gate_id, "metadata", detail)], actor)


def _answer(gk: Gatekeeper, answer: Answer) -> dict[str, Any]:
    gates = gk.rt.repo.get_many(answer.gate_ids)
    statuses = {gid: gates[gid].status if gid in gates else "unknown" for gid in answer.gate_ids}
    return {
        "submission_id": answer.submission_id,
        "gate_ids": answer.gate_ids,
        "statuses": statuses,
        "replayed": answer.replayed,
    }


def _state(gate: Gate) -> dict[str, Any]:
    return {
        "gate_id": gate.id,
        "policy": gate.policy_id,
        "status": gate.status,
        "decision": gate.decision,
        "reason": gate.reason,
        "sha256": gate.sha256,
        "size": gate.size,
        "source": gate.source,
        "report": json.loads(gate.report) if gate.report else None,
    }
