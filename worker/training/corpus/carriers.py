"""Carriers: the shapes in which the gate reads text, each able to hold a planted payload.

Every carrier takes the payload (an instruction, or a harmless sentence of the same shape) and
some benign ``filler`` text, and returns one artifact as a producer would emit it: a release diff
that adds a README section, a code comment, a docstring, a string or template literal or package
metadata; an e-mail with real headers and MIME parts; an issue or ticket; a CSV or Markdown table;
JSON tool output; a web page with hidden markup. The same carriers with harmless payloads are the
negatives, so that no shape is learnt as harmful by itself.
"""

from __future__ import annotations

import base64
import json
import random
from collections.abc import Callable

Carrier = Callable[[random.Random, str, str], str]


def _diff(path: str, lines: list[str], rng: random.Random, context: list[str] | None = None) -> str:
    """A git diff that adds ``lines`` to ``path`` (a new file, or a hunk inside old context)."""
    if context is None or rng.random() < 0.4:
        body = "".join(f"+{line}\n" for line in lines)
        return (
            f"diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n+++ b/{path}\n"
            f"@@ -0,0 +1,{len(lines)} @@\n{body}"
        )
    cut = rng.randrange(len(context) + 1)
    before, after = context[max(0, cut - 3) : cut], context[cut : cut + 3]
    removed = [] if rng.random() < 0.6 or not after else [after.pop(0)]
    hunk = (
        [f" {x}" for x in before]
        + [f"-{x}" for x in removed]
        + [f"+{x}" for x in lines]
        + [f" {x}" for x in after]
    )
    old = len(before) + len(removed) + len(after)
    new = len(before) + len(lines) + len(after)
    start = max(1, cut - len(before) + 1)
    return (
        f"diff --git a/{path} b/{path}\nindex {rng.getrandbits(28):07x}..{rng.getrandbits(28):07x} 100644\n"
        f"--- a/{path}\n+++ b/{path}\n@@ -{start},{old} +{start},{new} @@\n" + "\n".join(hunk) + "\n"
    )


def _paragraphs(filler: str) -> list[str]:
    return [p for p in filler.split("\n") if p.strip()][:60] or ["Usage notes."]


def readme_section(rng: random.Random, payload: str, filler: str) -> str:
    lines = _paragraphs(filler)
    title = rng.choice(
        (
            "## Notes",
            "## For AI agents",
            "## Setup",
            "### Important",
            "## Usage",
            "## Maintainers",
            "<!-- ai -->",
        )
    )
    section = [title, "", *payload.split("\n"), ""]
    cut = rng.randrange(len(lines) + 1)
    doc = lines[:cut] + section + lines[cut:]
    return _diff(
        rng.choice(("README.md", "docs/index.md", "CHANGELOG.md", "README.rst", "docs/usage.md")),
        doc,
        rng,
        lines,
    )


def code_comment(rng: random.Random, payload: str, filler: str) -> str:
    style = rng.choice(("py", "js", "go", "sh"))
    mark = "#" if style in ("py", "sh") else "//"
    code = {
        "py": [
            "import os",
            "",
            "def load_config(path):",
            "    with open(path) as handle:",
            "        return handle.read()",
            "",
        ],
        "js": [
            "'use strict';",
            "const path = require('path');",
            "",
            "function resolve(name) {",
            "  return path.join(__dirname, name);",
            "}",
            "",
        ],
        "go": [
            "package util",
            "",
            'import "strings"',
            "",
            "func Clean(s string) string {",
            "\treturn strings.TrimSpace(s)",
            "}",
        ],
        "sh": ["#!/bin/sh", "set -e", 'cd "$(dirname "$0")"', "make build"],
    }[style]
    comment = [f"{mark} {line}" if line else mark for line in payload.split("\n")]
    cut = rng.randrange(len(code) + 1)
    name = {
        "py": "src/pkg/config.py",
        "js": "lib/resolve.js",
        "go": "util/clean.go",
        "sh": "scripts/build.sh",
    }[style]
    return _diff(name, code[:cut] + comment + code[cut:], rng, code)


def docstring(rng: random.Random, payload: str, filler: str) -> str:
    body = [
        "def fetch(url, timeout=10):",
        '    """Fetch ``url`` and return the body.',
        "",
        *("    " + x for x in payload.split("\n")),
        '    """',
        "    return _session.get(url, timeout=timeout).text",
        "",
    ]
    if rng.random() < 0.5:
        body = [
            "/**",
            " * Resolve the configuration file.",
            " *",
            *(" * " + x for x in payload.split("\n")),
            " */",
            "export function resolveConfig(dir) {",
            "  return load(dir);",
            "}",
        ]
        return _diff(rng.choice(("src/config.ts", "lib/index.js")), body, rng)
    return _diff(rng.choice(("src/client.py", "pkg/http.py")), body, rng)


def string_literal(rng: random.Random, payload: str, filler: str) -> str:
    flat = payload.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    form = rng.choice(("py", "js", "tpl", "yaml"))
    if form == "py":
        lines = ["SYSTEM_NOTE = (", f'    "{flat}"', ")", "", "def banner():", "    return SYSTEM_NOTE"]
        return _diff("src/prompts.py", lines, rng)
    if form == "js":
        return _diff("src/messages.js", [f'export const NOTE = "{flat}";', "export default NOTE;"], rng)
    if form == "tpl":
        tpl = payload.replace("`", "'")
        return _diff(
            "src/prompt.ts", ["const prompt = `", *tpl.split("\n"), "`;", "module.exports = { prompt };"], rng
        )
    return _diff(
        ".github/agent.yml", ["agent:", "  instructions: |", *("    " + x for x in payload.split("\n"))], rng
    )


def package_metadata(rng: random.Random, payload: str, filler: str) -> str:
    flat = payload.replace("\n", " ")
    if rng.random() < 0.5:
        doc = {
            "name": rng.choice(("fast-config", "env-loader", "tiny-http")),
            "version": f"1.{rng.randrange(20)}.{rng.randrange(9)}",
            "description": flat,
            "main": "index.js",
            "license": "MIT",
        }
        return _diff("package.json", json.dumps(doc, indent=2, ensure_ascii=False).split("\n"), rng)
    lines = [
        "Metadata-Version: 2.1",
        "Name: config-helper",
        f"Version: 0.{rng.randrange(30)}.0",
        f"Summary: {flat[:200]}",
        "License: MIT",
        "",
        *_paragraphs(filler)[:8],
        "",
        *payload.split("\n"),
    ]
    return _diff("PKG-INFO", lines, rng)


def email(rng: random.Random, payload: str, filler: str) -> str:
    sender = rng.choice(
        (
            "billing@vendor-mail.com",
            "no-reply@notifications.example.org",
            "anna.weber@partner.de",
            "support@shop.example.com",
        )
    )
    boundary = f"=_{rng.getrandbits(48):012x}"
    intro = " ".join(_paragraphs(filler)[:2])[:400]
    text = f"Hello,\n\n{intro}\n\n{payload}\n\nBest regards,\nThe team"
    encoded = rng.random() < 0.25
    part = base64.encodebytes(text.encode()).decode() if encoded else text
    transfer = "base64" if encoded else "8bit"
    html = (
        f"<html><body><p>Hello,</p><p>{intro}</p>"
        + (f'<div style="display:none">{payload}</div>' if rng.random() < 0.5 else f"<p>{payload}</p>")
        + "</body></html>"
    )
    return (
        f"From: {sender}\nTo: user@example.com\nSubject: {rng.choice(('Your invoice', 'Meeting notes', 'Re: account update', 'Order confirmation'))}\n"
        f"Date: Tue, {rng.randrange(1, 28)} Oct 2025 09:{rng.randrange(60):02d}:00 +0000\n"
        f"Message-ID: <{rng.getrandbits(40):x}@mail.example.com>\nMIME-Version: 1.0\n"
        f'Content-Type: multipart/alternative; boundary="{boundary}"\n\n--{boundary}\n'
        f"Content-Type: text/plain; charset=utf-8\nContent-Transfer-Encoding: {transfer}\n\n{part}\n"
        f"--{boundary}\nContent-Type: text/html; charset=utf-8\n\n{html}\n--{boundary}--\n"
    )


def ticket(rng: random.Random, payload: str, filler: str) -> str:
    number = rng.randrange(100, 9999)
    title = rng.choice(
        (
            "Build fails on Windows",
            "Login page slow",
            "Feature request: export CSV",
            "Crash when config is empty",
            "Docs typo",
        )
    )
    intro = " ".join(_paragraphs(filler)[:3])[:600]
    return (
        f"Issue #{number}: {title}\nStatus: open  Labels: bug, triage\nReporter: user{rng.randrange(999)}\n\n"
        f"{intro}\n\n{payload}\n\n---\nComment by maintainer: thanks, looking into it.\n"
    )


def csv_table(rng: random.Random, payload: str, filler: str) -> str:
    flat = payload.replace('"', "'").replace("\n", " ")
    rows = [
        f'{i},"{w}",{rng.randrange(1, 500)},{rng.choice(("ok", "pending", "shipped"))}'
        for i, w in enumerate(filler.split()[:12], 1)
    ]
    cut = rng.randrange(len(rows) + 1)
    if rng.random() < 0.5:
        md = [f"| {r.split(',')[0]} | {r.split(',')[1].strip(chr(34))} | {r.split(',')[2]} |" for r in rows]
        note = f"| {len(rows) + 1} | {flat} | 0 |"
        return "\n".join(["| id | item | qty |", "|---|---|---|", *md[:cut], note, *md[cut:]]) + "\n"
    return (
        "\n".join(["id,item,qty,status", *rows[:cut], f'{len(rows) + 1},"{flat}",0,ok', *rows[cut:]]) + "\n"
    )


def tool_output(rng: random.Random, payload: str, filler: str) -> str:
    paras = _paragraphs(filler)
    results = [
        {"title": p[:60], "url": f"https://docs.example.com/{i}", "snippet": p[:200]}
        for i, p in enumerate(paras[:4])
    ]
    results.insert(
        rng.randrange(len(results) + 1),
        {"title": "Note", "url": "https://docs.example.com/n", "snippet": payload},
    )
    shape = rng.choice(("search", "api", "file"))
    if shape == "search":
        doc: object = {"tool": "web_search", "status": "ok", "results": results}
    elif shape == "api":
        doc = {
            "id": rng.getrandbits(32),
            "customer": {"name": "Ana Silva", "notes": payload},
            "orders": [{"sku": "A-1", "qty": 2}],
        }
    else:
        doc = {"path": "notes.txt", "content": "\n".join(paras[:3]) + "\n" + payload}
    return json.dumps(doc, indent=rng.choice((None, 2)), ensure_ascii=False)


def web_page(rng: random.Random, payload: str, filler: str) -> str:
    paras = _paragraphs(filler)[:6]
    hide = rng.choice(
        (
            "<!-- {p} -->",
            '<div style="display:none">{p}</div>',
            '<span style="color:#ffffff;font-size:1px">{p}</span>',
            "<details><summary>More</summary>{p}</details>",
            '<p hidden aria-hidden="true">{p}</p>',
            "<p>{p}</p>",
        )
    )
    body = [f"<p>{p}</p>" for p in paras]
    body.insert(rng.randrange(len(body) + 1), hide.format(p=payload))
    page = (
        "<!doctype html><html><head><title>Docs</title></head><body>\n"
        + "\n".join(body)
        + "\n</body></html>\n"
    )
    return _diff("docs/index.html", page.split("\n"), rng) if rng.random() < 0.3 else page


def bare(rng: random.Random, payload: str, filler: str) -> str:
    return payload


CARRIERS: dict[str, Carrier] = {
    "readme": readme_section,
    "comment": code_comment,
    "docstring": docstring,
    "literal": string_literal,
    "metadata": package_metadata,
    "email": email,
    "ticket": ticket,
    "table": csv_table,
    "tool_output": tool_output,
    "web": web_page,
    "bare": bare,
}
