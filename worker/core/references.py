"""Text that spells its letters as HTML character references, read as the characters they write.

``&#73;&#103;&#110;&#111;&#114;&#101;`` is "Ignore" to a browser, to an HTML-to-text tool and to a
language model reading the source, and letters and digits with nothing to judge to a model that
reads bytes. Ordinary pages write a few references for punctuation (``&amp;``, ``&#39;``,
``&nbsp;``); letters written that way hide words. The pre-check reads such a page as a decoded
layer (:mod:`worker.core.decode`, ``html-entities``); :func:`referenced_view` gives the windowed
models the same text in place of the raw bytes, each reference mapped to where it is written
(:meth:`worker.core.offsets.Mapped.raw_span`), and :func:`shown_references` shows a piece of the
raw bytes to a reviewer as the models read it.
"""

from __future__ import annotations

import html
import re

from worker.core.offsets import Mapped, PieceBuilder

NUMERIC_REFERENCE = re.compile(rb"&#(?:[xX]([0-9a-fA-F]{1,6})|([0-9]{1,7}));?")
SPELLED_LETTERS = 3  # letters written as numeric references: obfuscation, not markup
# Any character reference: numeric, or named with its semicolon (``&amp;``, ``&eacute;``).
_REFERENCE = re.compile(rb"&(?:#[xX][0-9a-fA-F]{1,6};?|#[0-9]{1,7};?|[A-Za-z][A-Za-z0-9]{1,31};)")


def is_letter(reference: re.Match[bytes]) -> bool:
    """Whether a :data:`NUMERIC_REFERENCE` match writes an ASCII letter."""
    hexa, decimal = reference.groups()
    code = int(hexa, 16) if hexa else int(decimal)
    return 65 <= code <= 90 or 97 <= code <= 122


def spells_letters(data: bytes) -> bool:
    """Whether ``data`` writes at least :data:`SPELLED_LETTERS` letters as numeric references."""
    if b"&#" not in data:
        return False
    spelled = 0
    for match in NUMERIC_REFERENCE.finditer(data):
        spelled += is_letter(match)
        if spelled >= SPELLED_LETTERS:
            return True
    return False


def referenced_view(data: bytes) -> Mapped | None:
    """``data`` with every character reference written as its character (UTF-8), when it spells
    letters that way (:func:`spells_letters`); None otherwise, read as it is."""
    if not spells_letters(data):
        return None
    builder, position = PieceBuilder(), 0
    for match in _REFERENCE.finditer(data):
        builder.add(data[position : match.start()], position, match.start(), True)
        builder.add(_character(match.group()), match.start(), match.end(), False)
        position = match.end()
    builder.add(data[position:], position, len(data), True)
    return Mapped.of(*builder.build())


def shown_references(chunk: bytes) -> bytes:
    """A piece of the raw bytes with its character references written as characters: a window
    named by raw offsets, shown to a reviewer as the models read it."""
    return _REFERENCE.sub(lambda match: _character(match.group()), chunk)


def _character(reference: bytes) -> bytes:
    """What one reference writes, in UTF-8 (an unknown name or a code out of range as
    :func:`html.unescape` reads it)."""
    return html.unescape(reference.decode("ascii")).encode("utf-8", "replace")
