"""Run frames: the events of one execution attempt (`Envelope.id` is the Run ID), and the
cancellation request that Core sends for it.

Per Run, in order: any number of event frames, then exactly one `done`. An `error` is
always followed by `done`. Usage frames are cumulative snapshots that replace the
previous one; an absent measurement is unknown, never zero.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from runtime.proto.strictness import LENIENT, STRICT

_OUT = LENIENT
_STRICT = STRICT


class PromptCancel(msgspec.Struct, **_STRICT):
    delivery_id: str = ""


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
