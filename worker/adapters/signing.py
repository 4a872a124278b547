"""The key allowed messages are signed with (worker.core.signature).

``CANARY_SIGNING_KEY`` when set (every host that publishes or verifies shares it); otherwise a
random 32-byte key kept in ``<data_dir>/signing.key`` (mode 0600), created on first use, which
serves one host (the embedded default, a single-machine install).
"""

from __future__ import annotations

import os
import secrets
import threading
from pathlib import Path

from worker.core.signature import sign
from worker.settings import Settings

_KEYS: dict[str, bytes] = {}
_LOCK = threading.Lock()


def signing_key(settings: Settings) -> bytes:
    """The signing key for ``settings`` (read or created once per process)."""
    if settings.signing_key is not None:
        return settings.signing_key.get_secret_value().encode()
    path = (settings.data_dir / "signing.key").resolve()
    with _LOCK:
        if str(path) not in _KEYS:
            _KEYS[str(path)] = _key_file(path)
        return _KEYS[str(path)]


def sign_allowed(settings: Settings, submission_id: str, sha256: str) -> str:
    """The signature of an allowed message (``decision`` is ``allow``)."""
    return sign(signing_key(settings), submission_id, sha256, "allow")


def _key_file(path: Path) -> bytes:
    """The key in ``path``, created atomically (O_EXCL) with mode 0600 when absent."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        key = path.read_text().strip().encode()
        if not key:
            raise RuntimeError(f"signing key file {path} is empty") from None
        return key
    key = secrets.token_hex(32).encode()
    with os.fdopen(fd, "wb") as fh:
        fh.write(key)
    return key
