"""Load versioned YAML policies from this package (or a path) and fingerprint them.

A policy's ``sha256`` covers its YAML, every rule file it names and every model file its
local model detectors read, so a gate's recorded fingerprint says exactly which rules and
models judged it. Every load looks at the files (a ``stat`` each) and only new content is
read, parsed and validated: an edited policy or rule file, or a retrained model, takes effect
in every process on its next gate, with no restart and no stale cache.

This is the only place that reads policy and rule files: the policy it returns carries each
named rule file's parsed content and sha256 (``HarmPolicy.ruleset_source``), and
:mod:`worker.core` compiles rules from that data, cached by sha256, without opening a file.
"""

from __future__ import annotations

import hashlib
import os
import threading
import time
from collections.abc import Callable, Sequence
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any, NamedTuple

import yaml

from worker.core.errors import ConfigError
from worker.core.policy import HarmPolicy, RulesetSource
from worker.core.ruleset import CompiledRuleset, Engine, compile_source, policy_rulesets

POLICY_DIR = Path(__file__).resolve().parent
RULES_DIR = POLICY_DIR / "rules"

# The files a local model detector of each kind reads, relative to its ``models_dir`` option
# (default: the package data of ``worker.weights``); ``{policy}`` is the policy's id. They are
# part of the fingerprint: a retrained model is a new policy version, as an edited rule file is.
MODEL_FILES: dict[str, tuple[str, ...]] = {
    "lexical": ("{policy}/lexical.npz",),
    "semantic": ("{policy}/semantic.npz", "minilm-static/embeddings.npz", "minilm-static/tokenizer.json"),
}
# ... and with ``reader: true``, also the reader's (worker.detectors.local.reader).
READER_FILES: tuple[str, ...] = ("{policy}/reader.npz", "minilm-reader/tokenizer.json")
ABSENT = "absent"  # the digest of a model file that is not there (its detector votes unavailable)


class PolicyError(ConfigError):
    """A policy could not be found or does not validate."""


def _load_yaml(raw: bytes) -> Any:
    """``yaml.safe_load`` through libyaml when it is there (the same documents, ~10x less CPU: the
    rule files took 0.3 CPU-s of every process start in pure Python)."""
    return yaml.load(raw, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))  # noqa: S506 - a safe loader


def available_policies() -> list[str]:
    """Ids of the policies shipped in ``policies/``."""
    return sorted(p.stem for p in POLICY_DIR.glob("*.yaml"))


def policy_path(policy: str) -> str:
    """The file of a policy id (``prompt-injection``) or of a ``.yaml``/``.yml`` path."""
    if policy.endswith((".yaml", ".yml")) and os.path.isfile(policy):
        return policy
    return os.path.join(POLICY_DIR, f"{policy}.yaml")


class FileContent(NamedTuple):
    raw: bytes
    sha256: str


class _Seen(NamedTuple):
    signature: tuple[int, int, int, int]
    read_at_ns: int
    content: FileContent


_SEEN: dict[tuple[str, str], _Seen] = {}  # (reader, path) -> what it saw
_SEEN_LOCK = threading.Lock()
_RACY_NS = 2_000_000_000  # coarser than any file system's timestamp granularity


def current_content(path: str) -> FileContent:
    """The bytes of ``path`` as they are now, and their sha256; ``OSError`` if unreadable.

    A file is re-read only when its ``stat`` changed, or when it had been written less than
    2 s before the last read (a same-size edit within one timestamp tick cannot be seen in
    ``stat``; git calls this "racy clean").
    """
    return _current(path, _read_content)


def current_sha256(path: str) -> str:
    """The sha256 of ``path`` as it is now, re-hashed by the same rule as ``current_content``
    but without keeping the bytes (model files are megabytes); ``OSError`` if unreadable."""
    return _current(path, _hash_file).sha256


def _read_content(path: str) -> FileContent:
    with open(path, "rb") as file:
        raw = file.read()
    return FileContent(raw, hashlib.sha256(raw).hexdigest())


def _hash_file(path: str) -> FileContent:
    with open(path, "rb") as file:
        return FileContent(b"", hashlib.file_digest(file, "sha256").hexdigest())


def _current(path: str, read: Callable[[str], FileContent]) -> FileContent:
    st = os.stat(path)
    signature = (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino)
    key = (read.__name__, path)
    seen = _SEEN.get(key)
    if seen is not None and seen.signature == signature and seen.read_at_ns - st.st_mtime_ns > _RACY_NS:
        return seen.content
    read_at = time.time_ns()
    content = read(path)
    with _SEEN_LOCK:
        _SEEN[key] = _Seen(signature, read_at, content)
    return content


def ruleset_content(name: str) -> FileContent:
    """The current content of ``policies/rules/<name>.yaml``; ``FileNotFoundError`` if there is none."""
    if not name or "/" in name or "\\" in name or name.startswith("."):
        raise FileNotFoundError(f"not a ruleset name: {name!r}")
    return current_content(os.path.join(RULES_DIR, f"{name}.yaml"))


def ruleset_source(name: str) -> RulesetSource:
    """``policies/rules/<name>.yaml`` as it is now, parsed (once per content): ``OSError`` if it
    cannot be read, ``yaml.YAMLError`` if it is not YAML."""
    content = ruleset_content(name)
    return _parsed_ruleset(name, content.raw, content.sha256)


@lru_cache(maxsize=64)
def _parsed_ruleset(name: str, raw: bytes, sha256: str) -> RulesetSource:
    document: Any = _load_yaml(raw)
    return RulesetSource(name=name, sha256=sha256, document=document)


def load_ruleset(name: str, engine: Engine = "auto") -> CompiledRuleset:
    """Validate and compile ``policies/rules/<name>.yaml`` as it is on disk now (compiled once
    per content); ``ConfigError`` if it is missing or invalid."""
    try:
        source = ruleset_source(name)
    except OSError as exc:
        raise ConfigError(f"unknown ruleset {name!r}: {exc}") from exc
    except yaml.YAMLError as exc:
        raise ConfigError(f"ruleset {name}.yaml is invalid: {exc}") from exc
    return compile_source(source, engine)


def resolve_rulesets(policy: HarmPolicy, names: Sequence[str]) -> list[CompiledRuleset]:
    """The compiled rulesets ``names``: those ``policy`` was loaded with exactly as it pinned
    them, any other (a detector's own ``rulesets`` option) as its file is now."""
    pinned = [name for name in names if policy.ruleset_source(name) is not None]
    compiled = dict(zip(pinned, policy_rulesets(policy, pinned), strict=True))
    return [compiled[name] if name in compiled else load_ruleset(name) for name in names]


def load_policy(policy: str) -> HarmPolicy:
    """Load and validate a policy by id (``prompt-injection``) or YAML path, as it is on disk now."""
    path = policy_path(policy)
    filename = os.path.basename(path)
    try:
        content = current_content(path)
    except FileNotFoundError:
        raise PolicyError(f"unknown policy {policy!r}; shipped: {', '.join(available_policies())}") from None
    except OSError as exc:
        raise PolicyError(f"policy {filename} cannot be read: {exc}") from exc
    parsed = _validated(content.raw, filename)
    sources: list[tuple[str, RulesetSource]] = []
    for name in named_rulesets(parsed):
        try:
            sources.append((name, ruleset_source(name)))
        except OSError as exc:
            raise PolicyError(
                f"policy {filename} names ruleset {name!r}, which cannot be read: {exc}"
            ) from exc
        except yaml.YAMLError as exc:
            raise PolicyError(f"policy {filename} names ruleset {name!r}, which is invalid: {exc}") from exc
    models = tuple((key, path, model_sha256(path)) for key, path in named_models(parsed))
    return _fingerprinted(content.raw, filename, content.sha256, tuple(sources), models)


class PolicyResolver:
    """Resolves each policy a task meets once: a batch of gates under one policy, each with
    several detectors, looks at the policy's files once, not once per detector per gate.

    Keep one per task (not longer: a later task must see an edited policy); it is not
    shared between threads.
    """

    def __init__(self) -> None:
        self._resolved: dict[str, HarmPolicy] = {}

    def resolve(self, ref: str, sha256: str | None = None) -> HarmPolicy:
        """The policy ``ref`` as it is now (loaded on first use only); with ``sha256``, a
        ``PolicyError`` unless that is still its fingerprint (it changed since submission)."""
        policy = self._resolved.get(ref)
        if policy is None:
            policy = self._resolved[ref] = load_policy(ref)
        if sha256 is not None and policy.sha256 != sha256:
            raise PolicyError(
                f"policy {policy.id} changed since submission ({sha256[:12]} -> {policy.sha256[:12]})"
            )
        return policy


def named_rulesets(policy: HarmPolicy) -> tuple[str, ...]:
    """Every rule file the policy's pre-check or ``rules`` detectors read, in a stable order."""
    names = list(policy.precheck.rulesets)
    for spec in policy.quorum.detectors:
        if spec.kind == "rules":
            names.extend(spec.options.get("rulesets") or ())
    return tuple(dict.fromkeys(str(name) for name in names))


def named_models(policy: HarmPolicy) -> tuple[tuple[str, str], ...]:
    """Every model file the policy's local model detectors read, as ``(detector:file, path)``.

    The key names the file relative to its detector's models directory, so the fingerprint of
    the same models is the same wherever the package is installed.
    """
    found: list[tuple[str, str]] = []
    for spec in policy.quorum.detectors:
        templates = MODEL_FILES.get(spec.kind, ())
        if templates and spec.options.get("reader") is True:
            templates = templates + READER_FILES
        if templates and isinstance(ranker := spec.options.get("second_ranker"), str):
            templates = templates + MODEL_FILES.get(ranker, ())  # the model that ranks for the reader
        directory = str(spec.options.get("models_dir") or default_models_dir()) if templates else ""
        for template in templates:
            relative = template.format(policy=policy.id)
            found.append((f"{spec.name}:{relative}", os.path.abspath(os.path.join(directory, relative))))
    return tuple(found)


@lru_cache(maxsize=1)
def default_models_dir() -> str:
    """Where the shipped model artifacts live (package data of ``worker.weights``; looked up once,
    as ``load_policy`` runs several times per gate)."""
    return str(resources.files("worker.weights"))


def model_sha256(path: str) -> str:
    """The current sha256 of a model file, or ``ABSENT`` if it cannot be read (the detector
    that needs it then votes ``unavailable``: a policy still loads without its models)."""
    try:
        return current_sha256(path)
    except OSError:
        return ABSENT


@lru_cache(maxsize=64)
def _validated(raw: bytes, filename: str) -> HarmPolicy:
    try:
        return HarmPolicy.model_validate(_load_yaml(raw))
    except (yaml.YAMLError, TypeError, ValueError) as exc:
        raise PolicyError(f"policy {filename} is invalid: {exc}") from exc


@lru_cache(maxsize=64)
def _fingerprinted(
    raw: bytes,
    filename: str,
    sha256: str,
    rulesets: tuple[tuple[str, RulesetSource], ...],
    models: tuple[tuple[str, str, str], ...],
) -> HarmPolicy:
    """One object per content (the same object on every load while nothing changes: each
    unchanged rule file gives the same ``RulesetSource``).

    The fingerprint: the sha256 of the policy's own sha256, each named rule file's and each
    model file's (``models``: key, path, digest).
    """
    fingerprint = hashlib.sha256(sha256.encode())
    for name, source in rulesets:
        fingerprint.update(b"\0ruleset %s\0%s" % (name.encode(), source.sha256.encode()))
    for key, _, digest in models:
        fingerprint.update(b"\0model %s\0%s" % (key.encode(), digest.encode()))
    policy = _validated(raw, filename).model_copy(update={"sha256": fingerprint.hexdigest()})
    policy.pin_rulesets(dict(rulesets))
    policy.pin_models({path: digest for _, path, digest in models})
    return policy
