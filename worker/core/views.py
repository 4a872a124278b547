"""The views of an artifact a local model reads, each named, so a window can point into one.

A windowed model (:mod:`worker.detectors.local.windows`) scores windows of more than the raw
bytes: a diff without its removed lines, an e-mail's decoded text parts, a diff's prose. A vote
names its best windows by view and byte offsets into that view, never by their text
(:class:`worker.core.models.ScoredWindow`); a reviewer's tool rebuilds the view from the stored
artifact with :func:`view_bytes` to show them. The names:

- ``raw``: the artifact's bytes as stored;
- ``added``: a diff without its removed lines (:func:`added_view`);
- ``decoded:N``: the N-th decoded text part of an e-mail (:func:`worker.core.mail.decoded_text_parts`);
- ``prose``: the comments, docstrings and sentences a diff adds (:func:`worker.core.prose.diff_prose`).
"""

from __future__ import annotations

from worker.core.diff import parse_diff
from worker.core.mail import decoded_text_parts
from worker.core.prose import diff_prose

View = bytes | bytearray  # a view as built (the prose view is the buffer it was gathered in)

RAW, ADDED, PROSE, DECODED = "raw", "added", "prose", "decoded:"


def added_view(data: bytes) -> bytes:
    """What a release adds: a unified diff without its removed lines (headers, hunk lines, context
    and added lines kept); anything that is not a diff, as it is. A release that deletes a clipper
    is not a clipper, so a model trained on this view never reads removed code."""
    diff = parse_diff(data)
    if diff is None or not len(diff.removed):
        return data
    pieces, last = [], 0
    for start, end in diff.removed.tolist():
        pieces.append(data[last:start])
        last = end
    pieces.append(data[last:])
    return b"".join(pieces)


def scanned_views(data: bytes, added_only: bool = False, prose: bool = False) -> list[tuple[str, View]]:
    """Every view a windowed model reads, by name: the raw bytes (or, ``added_only``, the diff
    without its removed lines), each decoded e-mail text part and, with ``prose``, a diff's prose."""
    first = added_view(data) if added_only else data
    views: list[tuple[str, View]] = [(RAW if first is data else ADDED, first)]
    views += [(f"{DECODED}{i}", part) for i, part in enumerate(decoded_text_parts(data))]
    if prose and (text := diff_prose(data)):
        views.append((PROSE, text))
    return views


def view_bytes(data: bytes, view: str) -> View | None:
    """The view named ``view`` of ``data`` (as :func:`scanned_views` names it); ``None`` for a
    name this version does not know or a part the artifact does not have."""
    if view == RAW:
        return data
    if view == ADDED:
        return added_view(data)
    if view == PROSE:
        return diff_prose(data)
    index = view.removeprefix(DECODED)
    if view.startswith(DECODED) and index.isdigit():
        parts = decoded_text_parts(data)
        return parts[int(index)] if int(index) < len(parts) else None
    return None
