"""Who is asking: signed session cookies, CSRF tokens, log-in throttling, a trusted proxy header.

The session is a cookie signed with ``CANARY_REVIEW_SECRET`` (itsdangerous, timestamped, eight
hours), HttpOnly, SameSite=Strict, and Secure whenever the request came over TLS. It holds the
reviewer's name and a random CSRF token that every form carries back; a POST without it is
refused. With ``CANARY_REVIEW_TRUSTED_HEADER`` set, the reviewer's name comes from that request
header instead (a reverse proxy that authenticated the person sets it); the name must still be
a registered reviewer, and forms still need the CSRF token. A session also carries a stamp of
the reviewer's password hash: setting a new password (``canary review add-user`` again) ends
every session opened with the old one.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from itsdangerous import BadSignature, URLSafeTimedSerializer
from starlette.requests import Request
from starlette.responses import Response

COOKIE = "canary_review"
SESSION_MAX_AGE_S = 8 * 3600


@dataclass
class Session:
    reviewer: str | None
    csrf: str
    changed: bool = False
    stamp: str = ""  # the reviewer's password stamp at log-in: a new password ends old sessions


class Sessions:
    """Reads and writes the signed session cookie."""

    def __init__(self, secret: str) -> None:
        self.serializer = URLSafeTimedSerializer(secret, salt="canary-review-session")

    def load(self, request: Request) -> Session:
        raw = request.cookies.get(COOKIE)
        if raw:
            try:
                data: Any = self.serializer.loads(raw, max_age=SESSION_MAX_AGE_S)
            except BadSignature:
                data = None
            if isinstance(data, dict) and isinstance(data.get("c"), str):
                reviewer, stamp = data.get("u"), data.get("s")
                return Session(
                    reviewer if isinstance(reviewer, str) else None,
                    data["c"],
                    stamp=stamp if isinstance(stamp, str) else "",
                )
        return Session(None, secrets.token_urlsafe(32), changed=True)

    def save(self, request: Request, response: Response, session: Session) -> None:
        """Set the cookie when the session is new or changed (a log-in, a log-out)."""
        if not session.changed:
            return
        response.set_cookie(
            COOKIE,
            self.serializer.dumps({"u": session.reviewer, "c": session.csrf, "s": session.stamp}),
            max_age=SESSION_MAX_AGE_S,
            path="/",
            httponly=True,
            samesite="strict",
            secure=request.url.scheme == "https",
        )


def password_stamp(password_hash: str) -> str:
    """A short digest of a reviewer's password hash, kept in the session (never the hash itself)."""
    return hashlib.sha256(password_hash.encode()).hexdigest()[:16]


def csrf_ok(session: Session, token: object) -> bool:
    """True when a form's ``csrf`` field is this session's token."""
    return isinstance(token, str) and bool(token) and hmac.compare_digest(token, session.csrf)


@dataclass
class Throttle:
    """Failed log-ins per key (a name, an address) in a sliding window; past ``limit`` the key is
    refused without checking the password until the window has passed. Per process: a
    deployment with several processes gets ``limit`` per process."""

    limit: int
    window_s: float
    _failures: dict[str, deque[float]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def blocked(self, key: str) -> bool:
        with self._lock:
            recent = self._recent(key)
            return len(recent) >= self.limit

    def fail(self, key: str) -> None:
        with self._lock:
            self._recent(key).append(time.monotonic())

    def clear(self, key: str) -> None:
        with self._lock:
            self._failures.pop(key, None)

    def _recent(self, key: str) -> deque[float]:
        recent = self._failures.setdefault(key, deque())
        cutoff = time.monotonic() - self.window_s
        while recent and recent[0] < cutoff:
            recent.popleft()
        return recent
