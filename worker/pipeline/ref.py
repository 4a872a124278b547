"""``GateRef``: what the broker carries for a gate and what the steps take, instead of a row."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from worker.adapters.db import Gate


class GateRef(BaseModel):
    """A gate by reference: its id, the policy it is judged under (as submitted), and where its
    bytes are. Frozen; it travels as a JSON-able dict (``to_message``/``from_message``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    policy_ref: str
    policy_id: str
    policy_sha256: str
    sha256: str
    object_key: str
    size: int

    @classmethod
    def of(cls, gate: Gate) -> GateRef:
        return cls(
            id=gate.id,
            policy_ref=gate.policy_ref,
            policy_id=gate.policy_id,
            policy_sha256=gate.policy_sha256,
            sha256=gate.sha256,
            object_key=gate.object_key,
            size=gate.size,
        )

    def to_message(self) -> dict[str, Any]:
        return self.model_dump(mode="json")

    @classmethod
    def from_message(cls, message: Any) -> GateRef | None:
        """The ref a message carries; ``None`` for anything off-shape (its gate then gets no vote
        from this detector: the quorum counts it missing, never harmless)."""
        try:
            return cls.model_validate(message)
        except ValidationError:
            return None
