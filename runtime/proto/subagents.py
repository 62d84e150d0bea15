"""Subagent observation frames (Runtime -> Core; `Envelope.id` is the root Run ID).

A harness that runs subagents (`subagent_observations` declared, `observe_subagent_
identities` set by Core) reports each one in this order: `subagent_identity` first
(who opened it, from which root turn and item, its name and instructions), then
`subagent_lifecycle` `active`, then for each of its turns `subagent_turn`
`in_progress`, that turn's `subagent_item`s (full snapshots, in `position` order), and
the terminal `subagent_turn`; a closed subagent ends with `subagent_lifecycle`
`closed`. Native ids are the harness's own; Core gives each subagent, turn and item its
public id.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from runtime.proto.errors import EngineFailureCode, ValidationError
from runtime.proto.run import Usage
from runtime.proto.strictness import LENIENT

_OUT = LENIENT
MAX_NATIVE_ID = 128
MAX_TEXT = 1024 * 1024
INVALID = EngineFailureCode.INVALID_REQUEST


def _check_id(value: str, what: str) -> None:
    if not value or len(value) > MAX_NATIVE_ID or not value.isprintable():
        raise ValidationError(INVALID, f"{what} must be 1-{MAX_NATIVE_ID} printable characters")


class SubagentIdentity(msgspec.Struct, **_OUT):
    native_id: str
    parent_turn_id: str  # the root Run's native turn (informational)
    source_item_id: str  # the native call that opened it
    native_created_at: int  # Unix ms
    parent_native_id: str = ""  # "" = opened by the root agent
    name: str | None = None
    instructions: str | None = None

    def validate(self) -> None:
        _check_id(self.native_id, "native_id")
        _check_id(self.source_item_id, "source_item_id")
        if self.parent_native_id:
            _check_id(self.parent_native_id, "parent_native_id")
        if len(self.instructions or "") > MAX_TEXT or len(self.name or "") > MAX_NATIVE_ID:
            raise ValidationError(INVALID, "subagent identity is too large")


class SubagentLifecycle(msgspec.Struct, **_OUT):
    native_id: str
    status: Literal["active", "closed"]
    occurred_at_ms: int
    effect_id: str = ""

    def validate(self) -> None:
        _check_id(self.native_id, "native_id")


class SubagentTurn(msgspec.Struct, **_OUT):
    native_id: str
    turn_id: str
    status: Literal["in_progress", "completed", "failed", "cancelled"]
    created_at_ms: int
    started_at_ms: int | None = None
    completed_at_ms: int | None = None
    usage: Usage | None = None

    def validate(self) -> None:
        _check_id(self.native_id, "native_id")
        _check_id(self.turn_id, "turn_id")


class SubagentMessage(msgspec.Struct, **_OUT):
    """A `message` item's snapshot: the subagent's input or its reply."""

    role: Literal["user", "assistant"]
    text: str
    status: Literal["in_progress", "completed", "incomplete"] = "completed"


class SubagentItem(msgspec.Struct, **_OUT):
    native_id: str
    turn_id: str
    item_id: str
    position: int
    kind: Literal["message"]
    payload: SubagentMessage

    def validate(self) -> None:
        _check_id(self.native_id, "native_id")
        _check_id(self.turn_id, "turn_id")
        _check_id(self.item_id, "item_id")
        if not 0 <= self.position < 2**31 or len(self.payload.text) > MAX_TEXT:
            raise ValidationError(INVALID, "subagent item is out of bounds")


SUBAGENT_FRAMES: dict[str, type[msgspec.Struct]] = {
    "subagent_identity": SubagentIdentity,
    "subagent_lifecycle": SubagentLifecycle,
    "subagent_turn": SubagentTurn,
    "subagent_item": SubagentItem,
}
