"""What ``canary eval`` reads: labelled JSONL records, and detector setups turned into policies.

A record is one JSON object per line (optionally gzip): ``id``, ``text``,
``label`` (``harmful``/``harmless``), and optionally ``source`` and ``policy``.
Records whose ``policy`` names another policy are skipped, so a mixed file can
be evaluated one policy at a time.

A setup (one ``--detectors`` value) is a comma-separated list of detector names
from the policy's quorum, optionally with one ``label=path.yaml`` item that
evaluates another policy file instead (``tuned=policies/x.yaml`` or
``tuned=x.yaml,rules,lexical``). A restricted setup becomes a derived policy
YAML: same id, version suffixed with the setup, quorum restricted to the named
detectors with ``required = min(policy.quorum.required, n)``.
"""

from __future__ import annotations

import gzip
import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import yaml

from policies import HarmPolicy, PolicyError, load_policy
from worker.core.errors import UsageError

LABELS = frozenset({"harmful", "harmless"})


class EvalInputError(UsageError):
    """A usage error: unreadable input, a malformed record, an unknown setup."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass(frozen=True)
class Record:
    """One labelled example. ``text`` is never logged or printed."""

    id: str
    text: str
    label: str
    source: str = ""

    @property
    def data(self) -> bytes:
        return self.text.encode("utf-8", "surrogatepass")


def _lines(path: Path) -> Iterator[str]:
    with path.open("rb") as raw:
        gzipped = raw.read(2) == b"\x1f\x8b"
    opener = gzip.open if gzipped else open
    with opener(path, "rt", encoding="utf-8") as fh:
        yield from fh


def _record(path: Path, lineno: int, line: str) -> tuple[Record, str | None]:
    where = f"{path}:{lineno}"
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as exc:
        raise EvalInputError(f"{where}: not JSON ({exc.msg})") from None
    if not isinstance(obj, dict):
        raise EvalInputError(f"{where}: not a JSON object")
    if not isinstance(obj.get("text"), str):
        raise EvalInputError(f"{where}: missing string field 'text'")
    if obj.get("label") not in LABELS:
        raise EvalInputError(f"{where}: 'label' must be harmful or harmless")
    record_id = str(obj.get("id") or where)
    policy = obj.get("policy")
    return Record(record_id, obj["text"], obj["label"], str(obj.get("source") or "")), policy


def read_records(paths: Sequence[str], policy_id: str, limit: int | None = None) -> tuple[list[Record], int]:
    """Records of ``policy_id`` from every file, in order, at most ``limit``; also how many were skipped."""
    records: list[Record] = []
    skipped = 0
    for name in paths:
        path = Path(name)
        if not path.is_file():
            raise EvalInputError(f"no such file: {name}")
        try:
            for lineno, line in enumerate(_lines(path), start=1):
                if not line.strip():
                    continue
                record, policy = _record(path, lineno, line)
                if policy not in (None, "", policy_id):
                    skipped += 1
                    continue
                records.append(record)
                if limit is not None and len(records) >= limit:
                    return records, skipped
        except (OSError, EOFError, UnicodeDecodeError) as exc:
            raise EvalInputError(f"{name}: cannot read ({type(exc).__name__})") from None
    return records, skipped


@dataclass(frozen=True)
class Setup:
    """A resolved setup: the row label, the policy ref to submit under, and what it runs."""

    label: str
    policy_ref: str
    policy: HarmPolicy

    @property
    def detectors(self) -> tuple[str, ...]:
        return tuple(d.name for d in self.policy.quorum.detectors)

    @property
    def required(self) -> int:
        return self.policy.quorum.required


def _load(ref: str) -> HarmPolicy:
    try:
        return load_policy(ref)
    except PolicyError as exc:
        raise EvalInputError(str(exc)) from None


def _split(text: str, base_ref: str) -> tuple[str, list[str]]:
    ref, names, other = base_ref, [], False
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        if "=" in item:
            label, _, path = item.partition("=")
            if other or not label.strip() or not path.strip().endswith((".yaml", ".yml")):
                raise EvalInputError(f"setup {text!r}: use at most one name=path.yaml item")
            ref, other = path.strip(), True
        elif item in names:
            raise EvalInputError(f"setup {text!r}: detector {item!r} named twice")
        else:
            names.append(item)
    if not names and not other:
        raise EvalInputError(f"setup {text!r} names no detector")
    return ref, names


def resolve_setup(text: str | None, base_ref: str, folder: Path) -> Setup:
    """Turn one ``--detectors`` value (``None``: the policy as shipped) into a policy to submit under."""
    if text is None:
        policy = _load(base_ref)
        return Setup(",".join(d.name for d in policy.quorum.detectors), base_ref, policy)
    ref, names = _split(text, base_ref)
    policy = _load(ref)
    known = [d.name for d in policy.quorum.detectors]
    unknown = [n for n in names if n not in known]
    if unknown:
        raise EvalInputError(
            f"setup {text!r}: {', '.join(unknown)} not in the quorum of {policy.id} ({', '.join(known)})"
        )
    if not names or sorted(names) == sorted(known):
        return Setup(text, ref, policy)
    path = derive_policy(policy, names, folder)
    return Setup(text, str(path), _load(str(path)))


def derive_policy(policy: HarmPolicy, names: Sequence[str], folder: Path) -> Path:
    """Write ``policy`` restricted to ``names`` as a new YAML file in ``folder``; return its path.
    The quorum keeps its reading of votes: passage by passage, and the dissent of each detector
    the setup keeps."""
    chosen = [d for d in policy.quorum.detectors if d.name in names]
    data = policy.model_dump(mode="json", exclude={"sha256"})
    data["version"] = f"{policy.version}+{'.'.join(d.name for d in chosen)}"
    data["quorum"] = {
        "required": min(policy.quorum.required, len(chosen)),
        "detectors": [d.model_dump(mode="json") for d in chosen],
        "colocate_bytes": policy.quorum.colocate_bytes,
        "dissent": {name: score for name, score in policy.quorum.dissent.items() if name in names},
    }
    tiers = [
        {"up_to_bytes": tier.up_to_bytes, "scores": kept}
        for tier in policy.quorum.dissent_short
        if (kept := {n: score for n, score in tier.scores.items() if n in names})
    ]
    if tiers:
        data["quorum"]["dissent_short"] = tiers
    slug = re.sub(r"[^A-Za-z0-9.-]+", "-", data["version"])
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{policy.id}@{slug}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path
