"""Run frames: the events of one execution attempt (`Envelope.id` is the Run ID), and the
cancellation request that Core sends for it.

Per Run, in order: any number of event frames, then exactly one `done`. An `error` is
always followed by `done`. Usage frames are cumulative snapshots that replace the
previous one; an absent measurement is unknown, never zero.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from runtime.proto import limits
from runtime.proto.errors import ValidationError
from runtime.proto.strictness import LENIENT, STRICT

_OUT = LENIENT
_STRICT = STRICT


class PromptCancel(msgspec.Struct, **_STRICT):
    delivery_id: str = ""


class PromptPause(msgspec.Struct, **_STRICT):
    """Core asks the Run to stop at its next checkpoint. The Run answers with nothing
    but its frames: a `checkpoint` (or the one it last sent, when it is waiting there),
    then `done` whose metadata says `paused`. A Run that never reaches a checkpoint
    ends as it would have."""


# The durable-commit boundaries a Run may checkpoint at (seed 003).
CheckpointBoundary = Literal[
    "between_model_calls",
    "awaiting_function_result",
    "awaiting_approval",
    "awaiting_choice",
]
CHECKPOINT_BOUNDARIES: tuple[str, ...] = (
    "between_model_calls",
    "awaiting_function_result",
    "awaiting_approval",
    "awaiting_choice",
)
PAUSED_METADATA_KEY = "paused"


class Checkpoint(msgspec.Struct, **_OUT):
    """The Run declares it could continue from here: nothing it started since its last
    frame is in flight. `cursor` is the harness's own resume state, opaque to Core and
    handed back in `execution_start.resume` when the turn continues on a new Run."""

    boundary: CheckpointBoundary
    cursor: str

    def validate(self) -> None:
        if not self.cursor or len(self.cursor.encode()) > limits.MAX_RESUME_CURSOR_BYTES:
            raise ValidationError("invalid_checkpoint", "a checkpoint cursor is empty or too large")


class Delta(msgspec.Struct, **_OUT):
    item_id: str
    delta: str
    sequence: int


class Thinking(msgspec.Struct, **_OUT):
    text: str
    item_id: str = ""
    sequence: int = 0


class OutputMessage(msgspec.Struct, **_OUT):
    id: str
    status: Literal["in_progress", "completed", "incomplete"]
    phase: Literal["", "commentary", "final_answer"] = ""
    text: str | None = None


class ToolObservation(msgspec.Struct, **_STRICT):
    kind: str
    status: str
    name: str = ""
    command: str = ""
    cwd: str | None = None
    exit_code: int | None = None
    duration_ms: int | None = None
    server: str = ""
    arguments: Any = None
    output: Any = None
    error: Any = None


class ToolCall(msgspec.Struct, **_STRICT):
    id: str
    name: str
    stage: Literal["before", "after"]
    observation: ToolObservation | None = None
    args: Any = None
    result: Any = None


class TokenCounts(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    input_tokens: int
    cached_input_tokens: int
    output_tokens: int
    reasoning_output_tokens: int
    total_tokens: int


class Usage(msgspec.Struct, **_OUT):
    tokens: TokenCounts | None = None
    provider: str = ""
    model: str = ""


class Error(msgspec.Struct, **_OUT):
    error: str
    code: str = ""
    http_status: int = 0


class Done(msgspec.Struct, **_OUT):
    """`workspace_snapshot` names the snapshot of the Run's managed workspace the
    Runtime took as the Run ended (runtime/snapshots.py), or is empty."""

    usage: Usage | None = None
    metadata: dict[str, str] | None = None
    source_completed_at_ms: int = 0
    workspace_snapshot: str = ""
