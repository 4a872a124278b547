"""A secret named first and sent later (a computed check of the rulesets).

``mp.creds.secret-sent`` reads a secret handed straight to a request on one line. Code as often
names it first and sends the name: ``const t = process.env.NPM_TOKEN`` and, lines later,
``fetch("https://...", { method: "POST", body: t })``. The check ``secret-flow`` follows a name
bound to an environment secret (a variable named for a token, key or password) to a request call
further on in the same file's added code that sends it to a URL written in the call (or bound to a
name in that code), anywhere but in its authentication (an Authorization header, a bearer or basic
credential, an ``auth`` argument: how API clients use their tokens). Names are matched as code
names, not as parts of a host or path (``t`` in ``api.t-stats.dev/t``).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from worker.core.checks import CheckContext

__all__ = ["secret_flow"]

_CODE = (".py", ".pyw", ".pth", ".js", ".mjs", ".cjs", ".ts", ".go", ".rb")
_SECRET = (
    rb"[A-Z0-9_]*(?:TOKEN|SECRET|PASSWORD|PASSWD|API_?KEY|ACCESS_?KEY|PRIVATE_?KEY|CREDENTIALS?)[A-Z0-9_]*"
)
# ``name = <env read of a secret>``, the read anywhere in the first 80 bytes of the value
_BINDING = re.compile(
    rb"(?:^|[\s;(,+{])(?:const |let |var |my )?([A-Za-z_$][\w$]{0,40}) ?:?= ?[^\n;=]{0,80}?"
    rb"(?:process\.env(?:\.|\[ ?[\"'`])|os\.environ(?:\.get\( ?|\[ ?)[\"']|os\.getenv\( ?[\"']"
    rb"|os\.Getenv\( ?\"|ENV(?:\.fetch\( ?|\[ ?)[\"'])" + _SECRET + rb"\b",
    re.MULTILINE,
)
# what every binding holds: the lines that do are the only ones ``_BINDING`` is tried on (speed;
# ``bytes.find`` for each is three times faster than one alternation)
_READS = (b"process.env", b"os.environ", b"os.getenv", b"os.Getenv", b"ENV.", b"ENV[")
# ``const { NPM_TOKEN, HOME } = process.env``: each secret-named key is a name
_DESTRUCTURED = re.compile(rb"\{([^}\n]{1,300})\} ?= ?process\.env\b")
_SECRET_KEY = re.compile(rb"\b(" + _SECRET + rb")\b")
_SINK = re.compile(
    rb"\b(?:requests\.(?:post|put|patch|get)|httpx\.(?:post|put|patch|get)|urlopen|Request"
    rb"|fetch|axios(?:\.(?:post|put|patch|get))?|https?\.(?:request|get)|http\.Post(?:Form)?"
    rb"|Net::HTTP\.post(?:_form)?|HTTParty\.post|RestClient\.post|Faraday\.post) ?\("
)
_WRITTEN_URL = re.compile(rb"https?://|\bhostname ?: ?[\"'`]")
# ``name = "https://..."``: a URL written into the code once and sent to by name
_URL_BINDING = re.compile(
    rb"(?:^|[\s;(,+{])(?:const |let |var |my )?([A-Za-z_$][\w$]{0,40}) ?:?= ?f?[\"'`]https?://", re.MULTILINE
)
_AUTHENTICATION = re.compile(rb"(?i)authori[sz]ation|bearer|\bbasic |\bauth\w* ?[=:(]")
REACH = 2048  # bytes of code from the binding in which a request may send it
_ARGUMENTS = 800  # bytes of a call read as its arguments


def _code_parts(context: CheckContext) -> Iterator[tuple[int, bytes]]:
    """``(offset, text)`` of each code file's added lines (the whole artifact without a diff)."""
    diff = context.diff
    if diff is None:
        yield 0, context.data
        return
    starts = [f.start for f in diff.files] + [len(context.data)]
    for index, file in enumerate(diff.files):
        if posixpath.splitext(file.path)[1].lower() not in _CODE:
            continue
        runs = diff.added_runs(file.start, starts[index + 1])
        if runs:
            start, end = runs[0][0], runs[-1][1]
            # the added runs in place, the lines between blanked (same offsets)
            text = bytearray(b" " * (end - start))
            for s, e in runs:
                text[s - start : e - start] = context.data[s:e]
            yield start, bytes(text)


def _arguments(text: bytes, opening: int) -> bytes:
    """The call's arguments from its ``(`` at ``opening``: to the matching ``)``, or
    ``_ARGUMENTS`` bytes."""
    depth = 0
    for index in range(opening, min(len(text), opening + _ARGUMENTS)):
        depth += {40: 1, 41: -1}.get(text[index], 0)
        if depth == 0:
            return text[opening + 1 : index]
    return text[opening + 1 : opening + _ARGUMENTS]


def _uses(arguments: bytes, name: bytes) -> Iterator[re.Match[bytes]]:
    """Where ``name`` is used as a code name in ``arguments`` (not as part of a host or path)."""
    return re.finditer(rb"(?<![\w$./\-])" + re.escape(name) + rb"(?![\w$\-])", arguments)


def _used(arguments: bytes, name: bytes) -> bool:
    return next(_uses(arguments, name), None) is not None


def _sends(arguments: bytes, name: bytes) -> bool:
    """``name`` used as a code name in ``arguments``, and not in their authentication."""
    return any(
        not _AUTHENTICATION.search(arguments[max(0, m.start() - 60) : m.start()])
        for m in _uses(arguments, name)
    )


def _found(text: bytes, needles: tuple[bytes, ...]) -> Iterator[int]:
    """Where each of ``needles`` starts in ``text``."""
    for needle in needles:
        at = text.find(needle)
        while at >= 0:
            yield at
            at = text.find(needle, at + 1)


def _bindings(text: bytes) -> Iterator[tuple[bytes, int]]:
    """``(name, end)`` of each ``_BINDING`` in ``text``, tried only on the lines with an env read
    (a binding never spans lines; ``^`` still matches only at a real line start)."""
    end = -1
    for read in sorted(_found(text, _READS)):
        if read < end:
            continue  # that line is done
        start = text.rfind(b"\n", 0, read) + 1
        end = text.find(b"\n", read)
        end = len(text) if end < 0 else end
        for m in _BINDING.finditer(text, start, end):
            yield m.group(1), m.end()


def secret_flow(context: CheckContext) -> list[tuple[int, int]]:
    """A name bound to an environment secret, sent by a request to a written URL (or a name bound
    to one) within ``REACH`` bytes further on; the hit lies on the request call."""
    if not any(read in context.data for read in _READS):
        return []  # no environment read anywhere: nothing is bound to a secret
    for offset, text in _code_parts(context):
        names = list(_bindings(text))
        for m in _DESTRUCTURED.finditer(text):
            names += [(key, m.end()) for key in _SECRET_KEY.findall(m.group(1))]
        if not names:
            continue
        urls = {m.group(1) for m in _URL_BINDING.finditer(text)}
        for sink in _SINK.finditer(text):
            arguments = _arguments(text, sink.end() - 1)
            if not _WRITTEN_URL.search(arguments) and not any(_used(arguments, u) for u in urls):
                continue
            for name, bound in names:
                if bound <= sink.start() <= bound + REACH and _sends(arguments, name):
                    return [(offset + sink.start(), offset + sink.end() + len(arguments) + 1)]
    return []
