"""The review app: Starlette, server-rendered Jinja2 pages, no script at all.

Every page escapes what it shows (Jinja2 autoescape); the artifact is shown as text, never as
HTML. Responses carry a Content-Security-Policy that allows no script and no framing, with
``X-Content-Type-Options: nosniff`` and ``Referrer-Policy: no-referrer``. Decisions go through
the same code as ``canary review decide`` (worker.pipeline.review.resolve).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from pathlib import Path
from typing import Any

import structlog
from jinja2 import Environment, FileSystemLoader
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from worker.adapters.reviewers import ReviewerStore
from worker.pipeline.review import ReviewError, resolve
from worker.pipeline.runtime import Runtime, build_runtime
from worker.settings import Settings
from worker.web.review import pages, queue
from worker.web.review.auth import Session, Sessions, Throttle, csrf_ok, password_stamp

HERE = Path(__file__).resolve().parent
log = structlog.get_logger("canary.review.web")

SECURITY_HEADERS = [
    (
        b"content-security-policy",
        b"default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; "
        b"frame-ancestors 'none'; base-uri 'none'",
    ),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
    (b"cache-control", b"no-store"),
]


class SecurityHeaders:
    """Adds the security headers to every response (pages, redirects, static files, errors)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *SECURITY_HEADERS]
            await send(message)

        await self.app(scope, receive, send_with_headers)


class ReviewApp:
    """The pages and actions, over one runtime and reviewer store."""

    def __init__(self, settings: Settings, rt: Runtime | None = None) -> None:
        self.rt = rt or build_runtime(settings, role="review-web")
        self.store = ReviewerStore(self.rt.repo.engine)
        secret = settings.review_secret.get_secret_value() if settings.review_secret else None
        if secret is None:
            log.warning("review_secret_unset", detail="random session key: sessions end on restart")
        self.sessions = Sessions(secret or secrets.token_urlsafe(32))
        self.trusted_header = (settings.review_trusted_header or "").strip().lower() or None
        self.tag_key = secrets.token_bytes(32)
        self.by_name = Throttle(limit=5, window_s=900)
        self.by_address = Throttle(limit=30, window_s=900)
        self.env = Environment(loader=FileSystemLoader(HERE / "templates"), autoescape=True)

    def page(self, request: Request, session: Session, name: str, status: int = 200, **ctx: Any) -> Response:
        html = self.env.get_template(name).render(
            csrf=session.csrf, me=ctx.pop("me", None), trusted=bool(self.trusted_header), **ctx
        )
        response = HTMLResponse(html, status_code=status)
        self.sessions.save(request, response, session)
        return response

    def reviewer(self, request: Request, session: Session) -> str | None:
        """The signed-in reviewer: the trusted header's name (when configured) or the session's,
        either one only while it is a registered reviewer."""
        name = request.headers.get(self.trusted_header) if self.trusted_header else session.reviewer
        row = self.store.get(name) if name else None
        if row is None or not (self.trusted_header or session.stamp == password_stamp(row.password_hash)):
            return None
        return row.name

    async def login_form(self, request: Request) -> Response:
        session = self.sessions.load(request)
        if self.trusted_header:
            return RedirectResponse("/", status_code=303)
        return self.page(request, session, "login.html")

    def name_tag(self, name: str) -> str:
        """A short keyed hash standing for a name typed on a failed log-in: one typed name gives one
        tag while this app runs, so repeats can be told apart, but the log never holds the typed
        text (a password typed into the name field) nor a hash that can be guessed offline."""
        return hmac.new(self.tag_key, name.encode(), hashlib.sha256).hexdigest()[:12]

    async def login(self, request: Request) -> Response:
        session = self.sessions.load(request)
        form = await request.form()
        if not csrf_ok(session, form.get("csrf")):
            return self.refused(request, session)
        name, password = str(form.get("name", "")).strip(), str(form.get("password", ""))
        address = request.client.host if request.client else "?"
        if self.by_name.blocked(name) or self.by_address.blocked(address):
            log.warning("review_login_throttled", name_tag=self.name_tag(name), address=address)
            msg = "Too many failed log-ins: wait 15 minutes."
            return self.page(request, session, "login.html", status=429, error=msg)
        row = await run_in_threadpool(self.store.check_password, name, password)
        if row is None:
            self.by_name.fail(name)
            self.by_address.fail(address)
            log.info("review_login_failed", name_tag=self.name_tag(name), address=address)
            return self.page(request, session, "login.html", status=401, error="Wrong name or password.")
        self.by_name.clear(name)
        log.info("review_login", reviewer=name, address=address)
        # A new session (and CSRF token) per log-in, stamped with the password it was opened with.
        new = Session(
            row.name, secrets.token_urlsafe(32), changed=True, stamp=password_stamp(row.password_hash)
        )
        response = RedirectResponse("/", status_code=303)
        self.sessions.save(request, response, new)
        return response

    async def logout(self, request: Request) -> Response:
        session = self.sessions.load(request)
        form = await request.form()
        if not csrf_ok(session, form.get("csrf")):
            return self.refused(request, session)
        response = RedirectResponse("/login", status_code=303)
        self.sessions.save(request, response, Session(None, secrets.token_urlsafe(32), changed=True))
        return response

    def refused(self, request: Request, session: Session) -> Response:
        log.warning("review_csrf_refused", path=request.url.path)
        return self.page(
            request,
            session,
            "error.html",
            status=403,
            message="Refused: the form's CSRF token is missing or wrong.",
        )

    async def signed_in(self, request: Request) -> tuple[Session, str | None]:
        session = self.sessions.load(request)
        return session, await run_in_threadpool(self.reviewer, request, session)

    async def queue_view(self, request: Request) -> Response:
        session, me = await self.signed_in(request)
        if me is None:
            return self.to_login(request, session)
        ctx = await run_in_threadpool(pages.queue_page, self.rt, queue.Filters.parse(request.query_params))
        return self.page(request, session, "queue.html", me=me, **ctx)

    async def item_view(self, request: Request) -> Response:
        session, me = await self.signed_in(request)
        if me is None:
            return self.to_login(request, session)
        return await self.item_response(request, session, me)

    async def item_response(
        self, request: Request, session: Session, me: str, error: str = "", status: int = 200
    ) -> Response:
        gate_id = request.path_params["gate_id"]
        ctx = await run_in_threadpool(pages.item_page, self.rt, gate_id, me)
        if ctx is None:
            return self.page(request, session, "error.html", status=404, me=me, message="No such gate.")
        notice = pages.NOTICES.get(request.query_params.get("done", ""), "")
        return self.page(request, session, "item.html", status, me=me, error=error, notice=notice, **ctx)

    async def decide(self, request: Request) -> Response:
        session, me = await self.signed_in(request)
        form = await request.form()
        if not csrf_ok(session, form.get("csrf")):
            return self.refused(request, session)
        if me is None:
            return self.page(request, session, "error.html", status=403, message="Sign in first.")
        decision, note = str(form.get("decision", "")), str(form.get("note", "")).strip()
        gate_id = request.path_params["gate_id"]
        if decision not in ("allow", "quarantine"):
            return await self.item_response(request, session, me, "Unknown decision.", 400)
        try:
            gate = await run_in_threadpool(resolve, self.rt, gate_id, decision, me, note)  # type: ignore[arg-type]
        except ReviewError as exc:
            return await self.item_response(request, session, me, str(exc), 409)
        done = "requested" if decision == "allow" and gate.status == "quarantine" else decision
        return RedirectResponse(f"/item/{gate.id}?done={done}", status_code=303)

    async def audit_view(self, request: Request) -> Response:
        session, me = await self.signed_in(request)
        if me is None:
            return self.to_login(request, session)
        events = await run_in_threadpool(queue.recent_events, self.rt)
        return self.page(request, session, "audit.html", me=me, events=events)

    def to_login(self, request: Request, session: Session) -> Response:
        if self.trusted_header:
            msg = "Not signed in: the proxy sent no registered reviewer."
            return self.page(request, session, "error.html", status=403, message=msg)
        response = RedirectResponse("/login", status_code=303)
        self.sessions.save(request, response, session)
        return response


async def healthz(_request: Request) -> Response:
    return PlainTextResponse("ok")


def create_app(settings: Settings, rt: Runtime | None = None) -> ASGIApp:
    """The review app for ``settings`` (``rt``: an existing runtime, e.g. a test's)."""
    review = ReviewApp(settings, rt)
    routes = [
        Route("/", review.queue_view),
        Route("/login", review.login_form, methods=["GET"]),
        Route("/login", review.login, methods=["POST"]),
        Route("/logout", review.logout, methods=["POST"]),
        Route("/item/{gate_id:str}", review.item_view, methods=["GET"]),
        Route("/item/{gate_id:str}/decide", review.decide, methods=["POST"]),
        Route("/audit", review.audit_view),
        Route("/healthz", healthz),
        Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
    ]
    return SecurityHeaders(Starlette(routes=routes))
