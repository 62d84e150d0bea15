"""An input batch: what every input of one admission shares, and what it leaves for the
orchestrator once the transaction commits."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class InputBatch:
    """One admission's batch: its idempotency `key` (None when the client gave none:
    nothing can replay it) and content hash `digest`; the turns to cancel and the turns
    with new input, acted on only after the commit."""

    session_id: str
    key: str | None
    digest: str
    cancels: list[str] = field(default_factory=list)
    steered: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Slot:
    """The place of one input in its batch."""

    batch: InputBatch
    position: int

    def param(self, field: str) -> str:
        """The request parameter naming `field` of this input (`events[2].call_id`)."""
        return f"events[{self.position}].{field}"
