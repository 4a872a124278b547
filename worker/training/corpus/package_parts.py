"""The parts every generated package is drawn from: names, hosts and values, a package.json, and
the diff that adds a new package's files.

Shared by the behaviour families (:mod:`.malware`) and their look-alikes (:mod:`.lookalikes`), so
that a harmless package and a harmful one are drawn from the same names and written the same way.
"""

from __future__ import annotations

import base64
import json
import random
from collections.abc import Sequence
from typing import Any, TypeVar

Files = list[tuple[str, str]]
T = TypeVar("T")

WORDS = (
    "core", "utils", "helper", "sdk", "client", "config", "logger", "parser", "lint", "format",
    "color", "env", "build", "dev", "types", "auth", "cache", "http", "async", "stream", "plugin",
)  # fmt: skip
TLDS = (".com", ".net", ".io", ".xyz", ".top", ".site", ".online", ".ru", ".cn", ".tk", ".live")
COLLECTORS = (
    "https://{w}{n}.oast.fun/{p}",
    "https://{w}-{n}.ngrok-free.app/{p}",
    "https://eo{n}.m.pipedream.net",
    "https://webhook.site/{uuid}",
    "https://discord.com/api/webhooks/{n}/{tok}",
    "https://api.telegram.org/bot{n}:{tok}/sendMessage",
    "https://{w}{n}{tld}/{p}",
    "http://{ip}:{port}/{p}",
    "https://{w}.{w2}{tld}/api/{p}",
)


class Draw:
    """The random choices of one record: names, hosts and values."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.pkg = self.package_name()

    def pick(self, options: Sequence[T]) -> T:
        return self.rng.choice(options)

    @property
    def dist(self) -> str:
        """The package's name as PyPI spells a distribution (no npm scope)."""
        return self.pkg.lstrip("@").replace("/", "-")

    @property
    def module(self) -> str:
        """The package's import name."""
        return self.dist.replace("-", "_")

    def ident(self) -> str:
        return self.pick(("data", "info", "payload", "d", "body", "res", "p", "out", "o", "x", "meta", "r"))

    def package_name(self) -> str:
        first, second = self.rng.sample(WORDS, 2)
        return self.pick(
            (f"{first}-{second}", f"{first}{second}", f"@{first}/{second}", f"py{first}-{second}")
        )

    def ip(self) -> str:
        r = self.rng
        return f"{r.randrange(11, 223)}.{r.randrange(256)}.{r.randrange(256)}.{r.randrange(1, 255)}"

    def collector(self) -> str:
        r = self.rng
        values = {
            "w": self.pick(WORDS),
            "w2": self.pick(WORDS),
            "n": str(r.randrange(10, 99999)),
            "p": self.pick(("", "log", "collect", "c", "data", "api", "t", "i")),
            "uuid": f"{r.getrandbits(32):08x}-{r.getrandbits(16):04x}-4{r.getrandbits(12):03x}-a{r.getrandbits(12):03x}-{r.getrandbits(48):012x}",
            "tok": base64.urlsafe_b64encode(r.randbytes(30)).decode().rstrip("="),
            "tld": self.pick(TLDS),
            "ip": self.ip(),
            "port": str(self.pick((80, 443, 8080, 4444, 1337, 9001, 8443, 3000))),
        }
        return self.pick(COLLECTORS).format(**values)

    def host(self) -> str:
        return f"{self.pick(WORDS)}{self.rng.randrange(1, 999)}{self.pick(TLDS)}"

    def binary_url(self) -> str:
        name = self.pick(("update", "svchost", "node-helper", "kworker", "syncd", "runtime", "agent"))
        return self.pick(
            (
                f"http://{self.ip()}/{name}",
                f"https://{self.host()}/dl/{name}",
                f"https://cdn.{self.host()}/{name}.bin",
                f"https://{self.host()}/{name}.exe",
                f"https://transfer.sh/{self.rng.getrandbits(24):x}/{name}",
            )
        )


def diff(files: Files) -> str:
    """A diff that adds ``files`` (a new package, as the labelled records are written)."""
    parts = []
    for path, content in files:
        lines = content.rstrip("\n").split("\n")
        body = "".join(f"+{line}\n" for line in lines)
        count = "" if len(lines) == 1 else f",{len(lines)}"
        parts.append(
            f"diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n+++ b/{path}\n"
            f"@@ -0,0 +1{count} @@\n{body}"
        )
    return "".join(parts)


def package_json(d: Draw, scripts: dict[str, str], main: str = "index.js") -> str:
    manifest: dict[str, Any] = {
        "name": d.pkg.removeprefix("py"),
        "version": d.pick(("1.0.0", "0.0.1", "99.9.9", "2.3.1", "1.0.2", "0.1.7")),
        "description": d.pick(("", "utility helpers", "A small library", "internal tooling", "fast parser")),
        "main": main,
        "scripts": scripts,
        "author": d.pick(("", "dev", "admin")),
        "license": d.pick(("MIT", "ISC", "Apache-2.0")),
    }
    return json.dumps(manifest, indent=d.pick((2, 4)))
