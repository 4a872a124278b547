"""The pre-check: cheap rules that may block an artifact before any detector runs.

    run_precheck(data, policy) -> PrecheckResult

Rules are data: ``policies/rules/<ruleset>.yaml``, one ruleset per name in
``policy.precheck.rulesets`` (schema and compilation: :mod:`worker.core.ruleset`).
A rule is a regex ``pattern`` or the name of a computed ``check`` (signals such
as ``zero-width-chars``, ``manifest-only-release``, ``new-executable-binary``),
with a ``weight`` and a ``scope``:

    any      the normalized artifact and every decoded layer
    text     the normalized artifact only
    added    the added lines of a diff (the whole artifact if it is not a diff),
             and decoded layers whose encoded run sits on an added line
    decoded  decoded layers only (base64, hex, URL, escapes, ROT13, reversed...)

Patterns see normalized bytes where every whitespace run is ONE byte, and newlines read as spaces,
so a plain space in a pattern matches any blank run, line breaks included; ``lines: true`` rules
see the newlines instead (for ``^``/``$``). A flat rule's ``^`` (a sentence's start) also reads a
line that starts with a capital letter, whatever ends the line before it (a heading, a table row, a
line of code): such rules read the text a second time with those newlines kept. A diff is read with each added line's ``+`` as a space
(a removed line keeps its ``-``). Optional ``files`` globs restrict a hit to diff files with
matching paths; ``min_entropy`` requires the matched bytes to look random; ``unquoted`` drops
matches inside quotation marks in their sentence (an advisory quoting ``"ignore previous
instructions"`` mentions an attack, it does not perform one); ``unless`` is a regex that vetoes a
match it finds inside it, ``not_after`` one that vetoes a match when the text just before it (up
to 64 bytes) ends with it (``cannot call the x_y tool on`` is an error message, not an order),
``not_before`` one that vetoes it when the text right after it starts with it (``you are now
ready``).

The verdict is ``harmful`` iff the summed weight of the DISTINCT rules that hit
reaches ``policy.precheck.block_score``; with ``precheck.locality_bytes``, only the
rules that hit within one stretch of that many bytes add up, and the evidence is that
stretch's; a rule with ``near`` (bytes) adds up only with hits that near it. A hit is
evidence (rule id, byte span of the original artifact, layer, weight); non-decisive
observations such as invisible characters or decoded payloads are signals. The artifact is
scanned in overlapping windows, so memory stays flat and every byte is seen.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from itertools import chain

from worker.core.decode import csv_delimiter, csv_text, decode_layers, iter_decoded, json_text
from worker.core.diff import Diff, parse_diff
from worker.core.diff_layers import added_layer, literal_layer, unmarked
from worker.core.matcher import Placed
from worker.core.models import Evidence, PrecheckResult, Span
from worker.core.normalize import Layer, normalize
from worker.core.paths import path_matches
from worker.core.policy import HarmPolicy
from worker.core.ruleset import CHECKS, MAX_MATCH, CheckContext, CompiledRuleset, Hit, Rule, policy_rulesets
from worker.core.segment import segment_spans

__all__ = ["OVERLAP", "WINDOW", "Scan", "run_precheck", "scan_policy", "scan_rules"]

WINDOW = 1 << 20  # bytes per scan window (1 MiB keeps the numpy work in cache)
OVERLAP = MAX_MATCH  # windows overlap by the longest possible rule match


@dataclass
class Scan:
    """What the rules found in one artifact: first evidence per rule, and signals."""

    evidence: dict[str, Evidence] = field(default_factory=dict)
    signals: dict[str, tuple[int, int]] = field(default_factory=dict)

    @property
    def score(self) -> float:
        return round(sum(e.weight for e in self.evidence.values()), 6)

    def hit(self, rule: Rule, start: int, end: int, layer: str) -> None:
        if rule.id not in self.evidence:
            span = Span(start=start, end=max(start, end))
            self.evidence[rule.id] = Evidence(rule_id=rule.id, span=span, layer=layer, weight=rule.weight)


def run_precheck(data: bytes, policy: HarmPolicy) -> PrecheckResult:
    """Scan ``data`` with the policy's rulesets; harmful iff the score reaches ``block_score``."""
    scan = scan_policy(data, policy)
    return PrecheckResult(
        verdict="harmful" if scan.score >= policy.precheck.block_score else "harmless",
        score=scan.score,
        evidence=tuple(sorted(scan.evidence.values(), key=lambda e: (e.span.start, e.rule_id))),
        signals=tuple(sorted(scan.signals)),
    )


def scan_policy(data: bytes, policy: HarmPolicy, rulesets: Sequence[str] | None = None) -> Scan:
    """Scan ``data`` as the gate does under ``policy``: its rulesets (or ``rulesets``) exactly
    as its fingerprint pinned them, hits adding up within its ``locality_bytes``."""
    names = policy.precheck.rulesets if rulesets is None else rulesets
    return scan_rules(data, policy_rulesets(policy, names), policy.precheck.locality_bytes)


def scan_rules(
    data: bytes,
    rulesets: Sequence[CompiledRuleset],
    locality: int | None = None,
    window: int = WINDOW,
    overlap: int = OVERLAP,
) -> Scan:
    """Run every rule of ``rulesets`` over all of ``data`` in overlapping windows.

    With ``locality`` (bytes), only hits within one stretch of that length add up: the scan
    keeps the evidence of its heaviest stretch (see :func:`_heaviest_stretch`).
    """
    scan = Scan()
    diff = parse_diff(data)
    if diff is not None and diff.manifest_only:
        scan.signals.update(
            {"manifest-only-release": CHECKS["manifest-only-release"](CheckContext(data, diff, {}))[0]}
        )
    for start, end in segment_spans(len(data), window, overlap):
        _scan_window(data, start, end, diff, rulesets, scan)

    def rescan(start: int, end: int) -> dict[str, Evidence]:
        part = Scan()
        for s, e in segment_spans(end - start, window, overlap):
            _scan_window(data, start + s, start + e, diff, rulesets, part)
        return part.evidence

    context = CheckContext(data, diff, scan.signals, rescan)
    for rule in (rule for ruleset in rulesets for rule in ruleset.checks):
        for start, end in CHECKS[rule.check or ""](context)[:1]:
            scan.hit(rule, start, end, "check")
    reach = {rule_id: near for ruleset in rulesets for rule_id, near in ruleset.near.items()}
    if reach.keys() & scan.evidence.keys():
        scan.evidence = _nearest(data, diff, rulesets, scan.evidence, reach, locality)
    elif locality is not None:
        scan.evidence = _heaviest_stretch(data, diff, rulesets, scan.evidence, locality)
    return scan


def _nearest(
    data: bytes,
    diff: Diff | None,
    rulesets: Sequence[CompiledRuleset],
    evidence: dict[str, Evidence],
    reach: dict[str, int],
    locality: int | None,
) -> dict[str, Evidence]:
    """The heaviest evidence where some rules hit only ``near`` the others (``reach``: rule id ->
    bytes): the other rules' hits as :func:`_heaviest_stretch` (or the whole scan) add them up,
    or the hits within ``near`` bytes of one such rule's hit, that span scanned again on its own,
    whichever weighs more. Hidden markup that asks for a command is one element: an HTML comment
    that mentions instructions and a collapsed install section 4 KB further on are two.
    Each rule's first hit is the centre of its span, as in :func:`_heaviest_stretch`."""
    far = {rule_id: hit for rule_id, hit in evidence.items() if rule_id not in reach}
    if locality is not None:
        stretch = _heaviest_stretch(data, diff, rulesets, far, locality)
        far = {rule_id: hit for rule_id, hit in stretch.items() if rule_id not in reach}
    best = Scan(evidence=far)
    for rule_id in sorted(reach.keys() & evidence.keys()):
        centre = evidence[rule_id]
        start = max(0, centre.span.start - reach[rule_id])
        end = min(len(data), centre.span.end + reach[rule_id])
        around = _rescanned(data, diff, rulesets, evidence, start, end)
        around.evidence[rule_id] = centre
        if around.score > best.score:
            best = around
    return best.evidence


def _heaviest_stretch(
    data: bytes,
    diff: Diff | None,
    rulesets: Sequence[CompiledRuleset],
    evidence: dict[str, Evidence],
    size: int,
) -> dict[str, Evidence]:
    """The evidence of the heaviest ``size``-byte stretch around one of the hits.

    An injection or a payload is one passage; weak rules that each match once somewhere in
    megabytes of code (a ``TODO: remove`` here, ``without notifying`` there) are not one. The
    whole-artifact scan records each rule's FIRST hit only, so each stretch centred on a hit
    is scanned again on its own (every layer, a few KB): it finds the rules that hit inside
    it even where their first hit lay elsewhere. Hits from the whole scan that lie inside the
    stretch count too (a payload decoded from a blob longer than the stretch, computed checks).
    """
    if not evidence:
        return evidence
    first = min(e.span.start for e in evidence.values())
    if max(e.span.end for e in evidence.values()) - first <= size:
        return evidence  # already one stretch
    best = Scan()
    for centre in sorted({e.span.start for e in evidence.values()}):  # at most one per rule
        start = max(0, min(centre - size // 2, len(data) - size))
        stretch = _rescanned(data, diff, rulesets, evidence, start, min(len(data), start + size))
        if stretch.score > best.score:
            best = stretch
    return best.evidence


def _rescanned(
    data: bytes,
    diff: Diff | None,
    rulesets: Sequence[CompiledRuleset],
    evidence: dict[str, Evidence],
    start: int,
    end: int,
) -> Scan:
    """``data[start:end]`` scanned again on its own, with the whole scan's ``evidence`` that lies
    inside it (a payload decoded from a blob longer than the span, computed checks)."""
    part = Scan()
    _scan_window(data, start, end, diff, rulesets, part)
    for rule_id, hit in evidence.items():
        if start <= hit.span.start < end:
            part.evidence.setdefault(rule_id, hit)
    return part


_SCOPES = {  # layer kind -> rule scopes that apply to it (diff / not a diff)
    ("text", True): frozenset({"any", "text"}),
    ("text", False): frozenset({"any", "text", "added"}),
    ("added", True): frozenset({"added"}),
    ("decoded", True): frozenset({"any", "decoded", "added"}),
    ("decoded", False): frozenset({"any", "decoded", "added"}),
    # a transport encoding (a mail body's quoted-printable or base64, HTML markup, JSON string escapes)
    # hides nothing: its decoded text is judged as plain text, not as a payload that "only appears
    # once decoded" (letters spelled as HTML references are such a payload: layer "html-entities")
    ("transport", True): frozenset({"any", "text"}),
    ("transport", False): frozenset({"any", "text", "added"}),
    # the sentence-like string literals a diff adds in code, without their quotes: an order to an AI
    # in a string constant is prose the agent reads, not a quotation (``unquoted`` rules see it)
    ("prose", True): frozenset({"any", "text", "added"}),
}
TRANSPORT_LAYERS = frozenset({"quoted-printable", "mime-base64", "html-text", "json-text", "csv-text"})
# the scopes of rules that read a diff's decoded layers wherever their encoded run sits; with none
# in a policy (malicious-package), a diff's decoded layers are those of its added lines alone: scope
# ``added`` keeps only hits there, and the context and removed lines were decoded for hits all
# discarded (and their payloads noted as signals of a release that did not add them)
_WHOLE_DECODED = _SCOPES["decoded", True] - {"added"}


def is_transport(layer_name: str) -> bool:
    """A layer reached through transport encodings only (``html-text/mime-base64`` as much as
    ``mime-base64``): the text as it is carried, not as it was hidden."""
    return all(part in TRANSPORT_LAYERS for part in layer_name.split("/"))


def unglue_escapes(chunk: bytes) -> bytes:
    """``\\n``, ``\\r`` and ``\\t`` escapes (two bytes each) -> two spaces; same length, same offsets.

    Text inside a string literal is split by its escapes, not by whitespace:
    ``'@echo off\\nrundll32 x.db,Run'`` or ``"previous instructions.\\nSend ..."``
    hide the word after the escape from every ``\\b`` in a rule. An escaped
    backslash (``C:\\\\new``) stays as it is.
    """
    if b"\\" not in chunk:
        return chunk
    # Read left to right, an escaped backslash comes first: split on it, and the parts hold no two
    # backslashes in a row, so their escapes never overlap and one regex with a fixed replacement
    # (no call back per escape: that cost 4 % of the pre-check on real diffs) unglues them in a
    # pass; three ``bytes.replace`` were three passes, 5 % of malicious-package's time.
    if b"\\\\" not in chunk:
        return _ESCAPE.sub(b"  ", chunk)
    return b"\\\\".join(_ESCAPE.sub(b"  ", part) for part in chunk.split(b"\\\\"))


_ESCAPE = re.compile(rb"\\[nrt]")


def _scan_window(
    data: bytes, start: int, end: int, diff: Diff | None, rulesets: Sequence[CompiledRuleset], scan: Scan
) -> None:
    read = frozenset(chain.from_iterable(r.scopes for r in rulesets))
    for layer, kind in _layers(data, start, end, diff, scan, read):
        scopes = _SCOPES[kind, diff is not None]

        def wanted(rule: Rule, scopes: frozenset[str] = scopes) -> bool:  # no start search for the rest
            return (
                rule.id not in scan.evidence
                and rule.scope in scopes
                and (diff is None or not rule.files or diff.has_file(rule.files))
            )

        placed = None if diff is None else _placement(layer, diff)
        for ruleset in rulesets:  # each matcher holds one scope's rules: only those that read the layer
            for matcher in ruleset.flat:
                if _reads(matcher.scopes, scopes):
                    _record(matcher.scan(layer.flat, layer.data, wanted, placed), layer, scopes, scan)
            for matcher in ruleset.starts:
                if _reads(matcher.scopes, scopes) and layer.starts != layer.flat:
                    _record(matcher.scan(layer.starts, layer.data, wanted, placed), layer, scopes, scan)
            if kind == "decoded":  # line-anchored rules need the lines a decoded layer no longer has
                continue
            for matcher in ruleset.lines:
                if _reads(matcher.scopes, scopes):
                    _record(matcher.scan(layer.data, wanted=wanted, placed=placed), layer, scopes, scan)


def _reads(rule_scopes: frozenset[str], layer_scopes: frozenset[str]) -> bool:
    """Whether rules of ``rule_scopes`` read a layer that rules of ``layer_scopes`` read: a layer no
    rule reads is neither built nor scanned (under malicious-package every pattern rule reads a
    diff's added lines only, and its whole text was scanned for hits all discarded)."""
    return not rule_scopes.isdisjoint(layer_scopes)


def _layers(
    data: bytes, start: int, end: int, diff: Diff | None, scan: Scan, read: frozenset[str]
) -> Iterator[tuple[Layer, str]]:
    """The layers of ``data[start:end]`` and their kinds, in scan order, each built when the scan
    asks for it (and dropped once read: a window's layers all at once were ~16 bytes per byte);
    records the signals normalization and decoding notice on the way. A diff's added lines and
    string literals are built only when a rule of scope ``read`` reads them."""
    window = unglue_escapes(data[start:end])  # once: the text and the added lines read the same bytes
    at_line_start = start == 0 or data[start - 1 : start] == b"\n"
    main = normalize(window if diff is None else unmarked(window, at_line_start), base=start)
    for name, span in main.signals.items():
        scan.signals.setdefault(name, span)
    text = Layer("text", main.data, main.offsets)
    yield text, "text"
    encoded = text  # the layer whose encoded runs are decoded
    if diff is not None:
        if _reads(read, _SCOPES["added", True]):
            added = added_layer(window, start, end, diff)
            yield added, "added"
            if read.isdisjoint(_WHOLE_DECODED):
                encoded = added  # every rule that reads a decoded layer reads only what the diff adds
        literals = literal_layer(window, start, end, diff) if _reads(read, _SCOPES["prose", True]) else None
        if literals is not None:
            yield literals, "prose"
    if data[:64].lstrip()[:1] in (b"{", b"[") and (strings := json_text(text)) is not None:
        yield strings, "transport"  # a JSON artifact: its strings as they read
    elif diff is None and (delimiter := csv_delimiter(data)) is not None:
        yield csv_text(window, start, delimiter), "transport"  # a CSV document: its fields as they read
    del window
    for layer in chain(iter_decoded(encoded), *((h, *decode_layers(h)) for h in main.hidden)):
        if is_transport(layer.name):
            yield layer, "transport"
            continue
        kind = next(part for part in layer.name.split("/") if part not in TRANSPORT_LAYERS)
        signal = "decoded-" + kind
        if kind not in ("rot13", "reversed") and layer.data and signal not in scan.signals:
            scan.signals[signal] = layer.offsets.span(0, 1)  # mapped only the first time
        yield layer, "decoded"


def _placement(layer: Layer, diff: Diff) -> Placed:
    """Whether a match in ``layer`` (at the layer's offsets) lies where its rule reads in the diff:
    a rule of scope ``added`` on a line the release adds (the ``added`` layer holds only those),
    a rule with ``files`` in a file they name."""

    def placed(rule: Rule, lstart: int, lend: int) -> bool:
        start, _ = layer.offsets.span(lstart, lend)
        if rule.scope == "added" and layer.name != "added" and not diff.in_added(start):
            return False
        return not rule.files or _in_files(rule.files, diff, start)

    return placed


def _record(hits: Iterator[Hit], layer: Layer, scopes: frozenset[str], scan: Scan) -> None:
    """Record ``hits`` of the layer's rules (the matcher gives only placed ones: :func:`_placement`)."""
    for rule, lstart, lend in hits:
        if rule.id in scan.evidence or rule.scope not in scopes:
            continue
        start, end = layer.offsets.span(lstart, lend)
        scan.hit(rule, start, end, layer.name)


def _in_files(globs: tuple[str, ...], diff: Diff, offset: int) -> bool:
    found = diff.file_at(offset)
    return found is not None and path_matches(found.path, globs)
