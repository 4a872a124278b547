"""A live mailbox as input: ``imaps://user@host[:port]/FOLDER`` (or ``mail:imaps://...``).

Each message not yet marked with the keyword ``$CanaryGated`` is read (``BODY.PEEK[]``: reading
does not mark it seen) and yielded as one artifact; the keyword is set only when the caller asks
for the next item, i.e. after it has registered this one (its gate row exists). So a crash
between the two leaves the message unmarked and a rerun submits it again, which finds its gate
(gates are keyed by sha256 and policy) rather than gating it twice; and a crash before the gate
row exists loses nothing, because the message is still unmarked.

The password comes from the environment variable that ``CANARY_MAIL_PASSWORD_ENV`` names
(default ``CANARY_MAIL_PASSWORD``); the connection is TLS, verified against the system's CAs or
``CANARY_MAIL_CA_FILE``. A message over ``CANARY_MAIL_MAX_BYTES`` is reported, left unmarked and
not gated; the rest of the folder goes on. A message whose MIME is malformed or whose charset is
unknown is gated as the bytes it is (the pre-check reads them raw and decoded; nothing fails open).
"""

from __future__ import annotations

import contextlib
import imaplib
import os
import re
import ssl
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

from worker.core.errors import CanaryError

GATED_KEYWORD = "$CanaryGated"
SCHEMES = ("imaps://", "mail:imaps://")


class MailError(CanaryError):
    """The mailbox cannot be read (address, password, TLS, login or folder)."""


@dataclass(frozen=True)
class Mailbox:
    user: str
    host: str
    port: int
    folder: str

    def label(self, uidvalidity: str, uid: str) -> str:
        """The message's IMAP URL (RFC 5092): names the message for good across reruns."""
        return (
            f"imaps://{self.user}@{self.host}:{self.port}/{self.folder};UIDVALIDITY={uidvalidity}/;UID={uid}"
        )


@dataclass(frozen=True)
class MailOptions:
    password_env: str = "CANARY_MAIL_PASSWORD"
    ca_file: str | None = None
    max_bytes: int = 64 * 1024 * 1024
    timeout_s: float = 60.0


def options_from(settings: Any) -> MailOptions:
    """The mail options of a ``worker.settings.Settings``."""
    return MailOptions(settings.mail_password_env, settings.mail_ca_file, settings.mail_max_bytes)


def is_mailbox(raw: str) -> bool:
    return raw.startswith(SCHEMES)


def parse_mailbox(raw: str) -> Mailbox:
    """``imaps://user@host[:port]/FOLDER`` (``mail:`` prefix optional); FOLDER defaults to INBOX."""
    parts = urlsplit(raw.removeprefix("mail:"))
    try:
        port = parts.port or 993
    except ValueError:
        raise MailError(f"{raw}: the port is not a number") from None
    if parts.scheme != "imaps" or not parts.hostname or not parts.username:
        raise MailError(f"{raw}: expected imaps://user@host[:port]/FOLDER")
    if parts.password:
        raise MailError(f"{raw}: a password in the address would end up in logs; set it in the environment")
    folder = unquote(parts.path.lstrip("/")) or "INBOX"
    return Mailbox(unquote(parts.username), parts.hostname, port, folder)


def _quoted(folder: str) -> str:
    return '"' + folder.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _connect(box: Mailbox, options: MailOptions) -> imaplib.IMAP4_SSL:
    password = os.environ.get(options.password_env)
    if not password:
        raise MailError(
            f"no password for {box.user}@{box.host}: set the environment variable {options.password_env}"
        )
    context = ssl.create_default_context(cafile=options.ca_file)
    try:
        conn = imaplib.IMAP4_SSL(box.host, box.port, ssl_context=context, timeout=options.timeout_s)
    except (OSError, imaplib.IMAP4.error) as exc:
        raise MailError(f"cannot connect to {box.host}:{box.port} over TLS: {exc}") from exc
    try:
        conn.login(box.user, password)
        typ, _ = conn.select(_quoted(box.folder))
        if typ != "OK":
            raise MailError(f"no folder {box.folder!r} for {box.user}@{box.host}")
    except imaplib.IMAP4.error as exc:
        conn.shutdown()
        raise MailError(f"{box.user}@{box.host}: {exc}") from exc
    except MailError:
        conn.shutdown()
        raise
    return conn


_SIZE = re.compile(rb"RFC822\.SIZE (\d+)")


def read_mailbox(raw: str, errors: list[str] | None, options: MailOptions) -> Iterator[tuple[str, bytes]]:
    """Yield ``(IMAP URL, message bytes)`` for each unmarked message, oldest UID first; mark each
    when the next is asked for (see the module docstring). Per-message problems go to ``errors``
    (raised as :class:`MailError` when ``errors`` is None); the folder goes on."""
    box = parse_mailbox(raw)
    conn = _connect(box, options)
    try:
        uidvalidity = (conn.response("UIDVALIDITY")[1] or [b"0"])[0]
        validity = uidvalidity.decode() if isinstance(uidvalidity, bytes) else "0"
        typ, data = conn.uid("SEARCH", "UNKEYWORD", GATED_KEYWORD)
        if typ != "OK":
            raise MailError(f"{raw}: SEARCH failed: {data!r}")
        uids = [u.decode() for u in (data[0] or b"").split()]
        for uid in uids:
            label = box.label(validity, uid)
            try:
                message = _fetch(conn, uid, options.max_bytes)
            except MailError as exc:
                if errors is None:
                    raise
                errors.append(f"{label}: {exc}")
                continue
            yield label, message
            try:
                _mark(conn, uid, label)  # the caller asked for the next one: this one is registered
            except MailError as exc:
                if errors is None:
                    raise
                errors.append(str(exc))
    finally:
        with contextlib.suppress(OSError, imaplib.IMAP4.error):
            conn.logout()


def _fetch(conn: imaplib.IMAP4_SSL, uid: str, max_bytes: int) -> bytes:
    typ, data = conn.uid("FETCH", uid, "(RFC822.SIZE)")
    found = _SIZE.search(data[0]) if typ == "OK" and isinstance(data[0], bytes) else None
    if found is None:
        raise MailError("the server gave no size for the message; not gated")
    size = int(found.group(1))
    if size > max_bytes:
        raise MailError(
            f"message of {size} bytes is over the {max_bytes}-byte limit (CANARY_MAIL_MAX_BYTES); not gated"
        )
    typ, data = conn.uid("FETCH", uid, "(BODY.PEEK[])")
    for item in data if typ == "OK" else []:
        if isinstance(item, tuple) and len(item) == 2 and isinstance(item[1], bytes):
            return item[1]
    raise MailError(f"the server did not send the message ({typ}); not gated")


def _mark(conn: imaplib.IMAP4_SSL, uid: str, label: str) -> None:
    typ, data = conn.uid("STORE", uid, "+FLAGS.SILENT", f"({GATED_KEYWORD})")
    if typ != "OK":
        raise MailError(f"{label}: gated, but the server refused the {GATED_KEYWORD} keyword ({data!r})")
