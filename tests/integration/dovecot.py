"""A private dovecot IMAP server for tests: its own config in a temp folder, a self-signed
certificate, one passwd-file user, TLS on a free loopback port. The system service is not used.

Plain functions (no pytest, no Canary Gate imports), like ``services.py``. Runs as root (the
Debian package's ``dovecot``/``dovenull`` users drop privileges) or as any other user (then every
service runs as that user). Messages are appended over IMAP itself, so the test sees what a
producer sees.
"""

from __future__ import annotations

import getpass
import imaplib
import os
import pwd
import shutil
import ssl
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from tests.integration.services import check_port, free_port

USER = "gate"
PASSWORD = "pw-for-tests-only"


@dataclass
class Dovecot:
    root: Path
    port: int
    ca_file: str
    config: Path

    @property
    def url(self) -> str:
        return f"imaps://{USER}@127.0.0.1:{self.port}/INBOX"

    def client(self) -> imaplib.IMAP4_SSL:
        conn = imaplib.IMAP4_SSL(
            "127.0.0.1", self.port, ssl_context=ssl.create_default_context(cafile=self.ca_file)
        )
        conn.login(USER, PASSWORD)
        conn.select("INBOX")
        return conn

    def append(self, messages: list[bytes]) -> None:
        conn = self.client()
        for message in messages:
            conn.append("INBOX", None, None, message)
        conn.logout()

    def stop(self) -> None:
        subprocess.run(["dovecot", "-c", str(self.config), "stop"], capture_output=True, timeout=30)
        deadline = time.monotonic() + 10
        while (self.root / "run" / "master.pid").exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        shutil.rmtree(self.root, ignore_errors=True)


def dovecot_missing() -> str | None:
    if shutil.which("dovecot") is None and not Path("/usr/sbin/dovecot").exists():
        return "dovecot is not installed (apt-get install dovecot-imapd)"
    if shutil.which("openssl") is None:
        return "openssl is not installed"
    return None


def start_dovecot() -> Dovecot:
    """Start dovecot in a new folder (config, cert, mail, logs) on a free loopback port."""
    root = Path(tempfile.mkdtemp(prefix="canary-dovecot-"))
    root.chmod(0o755)
    cert, key = root / "cert.pem", root / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=127.0.0.1",
         "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    port = free_port()
    me = getpass.getuser()
    as_root = os.getuid() == 0
    # Dovecot never runs a mail process as root: as root, the mail user is the package's
    # ``dovecot`` user, and the server's folder must be one that user can walk into.
    uid, gid = (
        (pwd.getpwnam("dovecot").pw_uid, pwd.getpwnam("dovecot").pw_gid)
        if as_root
        else (os.getuid(), os.getgid())
    )
    (root / "mail").mkdir(exist_ok=True)
    if as_root:
        os.chown(root / "mail", uid, gid)
    (root / "passwd").write_text(f"{USER}:{{PLAIN}}{PASSWORD}:{uid}:{gid}::{root / 'mail'}::\n")
    login_user = "dovenull" if as_root else me
    internal_user = "dovecot" if as_root else me
    config = root / "dovecot.conf"
    config.write_text(
        f"""
base_dir = {root}/run
state_dir = {root}/state
log_path = {root}/dovecot.log
info_log_path = {root}/dovecot.log
protocols = imap
listen = 127.0.0.1
ssl = required
ssl_cert = <{cert}
ssl_key = <{key}
auth_mechanisms = plain
first_valid_uid = {uid}
last_valid_uid = {uid}
first_valid_gid = {gid}
default_login_user = {login_user}
default_internal_user = {internal_user}
{"" if as_root else f"default_internal_group = {me}"}
mail_location = maildir:{root}/mail/%u
passdb {{
  driver = passwd-file
  args = {root}/passwd
}}
userdb {{
  driver = passwd-file
  args = {root}/passwd
}}
service imap-login {{
  inet_listener imap {{
    port = 0
  }}
  inet_listener imaps {{
    address = 127.0.0.1
    port = {port}
    ssl = yes
  }}
  {"" if as_root else "chroot ="}
}}
service auth {{
  user = {"root" if as_root else me}
}}
service auth-worker {{
  user = {"root" if as_root else me}
}}
service anvil {{
  {"" if as_root else "chroot ="}
}}
service stats {{
  unix_listener stats-reader {{
    user = {internal_user}
  }}
  unix_listener stats-writer {{
    user = {internal_user}
  }}
}}
"""
    )
    for sub in ("run", "state"):
        (root / sub).mkdir(exist_ok=True)
    # The daemon keeps its standard streams: files, not pipes, or waiting for it would never end.
    with (root / "start.log").open("w") as out:
        started = subprocess.run(["dovecot", "-c", str(config)], stdout=out, stderr=out, timeout=60)
    if started.returncode != 0:
        raise RuntimeError(f"dovecot did not start: {(root / 'start.log').read_text().strip()[-1000:]}")
    server = Dovecot(root, port, str(cert), config)
    deadline = time.monotonic() + 30
    while check_port("127.0.0.1", port) is not None:
        if time.monotonic() > deadline:
            log = (root / "dovecot.log").read_text() if (root / "dovecot.log").exists() else ""
            server.stop()
            raise RuntimeError(f"dovecot did not listen on {port}: {log[-1000:]}")
        time.sleep(0.1)
    return server
