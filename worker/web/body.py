"""What an intake request carries: the artifact's bytes, its policies, a source and metadata.

Two shapes, one result (:class:`ArtifactRequest`):

- ``Content-Type: application/json``: ``{"content": "..."}`` or ``{"content_base64": "..."}``,
  with ``policies`` (list of ids), ``source`` (string) and ``metadata`` (object);
- any other content type: the raw body is the artifact; policies come from ``?policy=``
  (repeatable) and the source from ``?source=``.

Every defect is a :class:`BadRequestError` with one line that says what to fix; nothing here raises
anything else for any input.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from policies import available_policies
from worker.core.errors import UsageError

MAX_METADATA_BYTES = 16 * 1024
MAX_SOURCE_CHARS = 255
_POLICY_ID = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")


class BadRequestError(UsageError):
    """The request cannot be gated as sent; ``status`` is the HTTP status to answer with."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message, status)
        self.message = message
        self.status = status

    def __str__(self) -> str:
        return self.message


@dataclass(frozen=True)
class ArtifactRequest:
    data: bytes
    policies: list[str]
    source: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)

    def fingerprint(self) -> str:
        """A digest of everything the request asks for: an idempotency key reused with another
        request is told apart from a retry of the same one."""
        h = hashlib.sha256(self.data)
        h.update(json.dumps([self.policies, self.source, self.metadata], sort_keys=True).encode())
        return h.hexdigest()


def is_json(content_type: str) -> bool:
    media = content_type.split(";", 1)[0].strip().lower()
    return media == "application/json" or media.endswith("+json")


def parse_request(
    body: bytes, content_type: str, query_policies: Sequence[str], query_source: str = ""
) -> ArtifactRequest:
    """The artifact request in ``body``; a :class:`BadRequestError` naming the first defect."""
    if not is_json(content_type):
        return ArtifactRequest(body, checked_policies(list(query_policies)), checked_source(query_source))
    try:
        doc = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BadRequestError(f"the body is not valid JSON ({exc})") from None
    if not isinstance(doc, dict):
        raise BadRequestError("the JSON body must be an object with content or content_base64")
    unknown = sorted(set(doc) - {"content", "content_base64", "policies", "source", "metadata"})
    if unknown:
        raise BadRequestError(
            f"unknown field(s) {', '.join(unknown)}; expected content | content_base64, policies, source, metadata"
        )
    policies = doc.get("policies")
    if policies is None:
        policies = list(query_policies)
    if not isinstance(policies, list) or not all(isinstance(p, str) for p in policies):
        raise BadRequestError("policies must be a list of policy ids")
    source = doc.get("source", query_source)
    if not isinstance(source, str):
        raise BadRequestError("source must be a string")
    return ArtifactRequest(_content(doc), checked_policies(policies), checked_source(source), _metadata(doc))


def _content(doc: dict[str, Any]) -> bytes:
    if ("content" in doc) == ("content_base64" in doc):
        raise BadRequestError("give exactly one of content (text) or content_base64")
    if "content" in doc:
        text = doc["content"]
        if not isinstance(text, str):
            raise BadRequestError("content must be a string (use content_base64 for bytes)")
        return text.encode("utf-8", errors="surrogatepass")
    encoded = doc["content_base64"]
    if not isinstance(encoded, str):
        raise BadRequestError("content_base64 must be a string")
    try:
        return base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise BadRequestError(f"content_base64 is not valid base64 ({exc})") from None


def _metadata(doc: dict[str, Any]) -> dict[str, Any]:
    metadata = doc.get("metadata", {})
    if not isinstance(metadata, dict):
        raise BadRequestError("metadata must be a JSON object")
    if len(json.dumps(metadata)) > MAX_METADATA_BYTES:
        raise BadRequestError(f"metadata is over {MAX_METADATA_BYTES} bytes as JSON")
    return metadata


def checked_policies(policies: list[str]) -> list[str]:
    """Policy ids the server ships, in order, without repeats. Only ids: a path would let a client
    name any YAML file on the server."""
    if not policies:
        raise BadRequestError("at least one policy is required (policies: [...] or ?policy=)")
    shipped = available_policies()
    for ref in policies:
        if not _POLICY_ID.match(ref) or ref not in shipped:
            raise BadRequestError(f"unknown policy {ref[:64]!r}; this server has: {', '.join(shipped)}", 422)
    return list(dict.fromkeys(policies))


def checked_source(source: str) -> str:
    if len(source) > MAX_SOURCE_CHARS:
        raise BadRequestError(f"source is over {MAX_SOURCE_CHARS} characters")
    return source
