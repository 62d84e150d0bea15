"""The resume cursor of a builtin turn's checkpoints.

A builtin turn checkpoints before each model call: every tool result of the turn so far
is in its conversation and nothing is in flight, so a new Run can call the model again
from there without repeating any effect. The cursor carries what the new Run needs and
Core's committed items do not hold: the turn's own conversation entries (its input,
replies, tool calls and results, workspace and MCP observations included), the number
of conversation entries that came before the turn (`base`), the model calls made, the
usage counted so far (None once it became unknown) and the run manifest.

A turn also checkpoints while it waits for the result of a client-executed function
(`awaiting_function_result`): the cursor then names the call it waits for (`waiting`,
the wire call id); and while a workspace command waits for its approval
(`awaiting_approval`): the cursor then names the permission request (`permission`; the
command has not started). The turn's tool calls whose results are not among its entries
are, in order, the one waited for and those that never started; a new Run waits for the
first one's result (or decision, then runs the command when approved) and runs the
others.

The cursor is opaque to Core and bounded by `limits.MAX_RESUME_CURSOR_BYTES`; a turn
whose state would not fit declares no checkpoint there (a crash then fails it, and a
pause waits for a later safe point), never a truncated one.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from runtime.harness.base import NativeFailure
from runtime.harness.builtin.conversation import (
    AssistantMessage,
    Entry,
    ToolCall,
    ToolResult,
    UserMessage,
)
from runtime.harness.builtin.model import Usage
from runtime.proto import limits

VERSION = 1


class CursorInvalid(NativeFailure):
    """The cursor is not one this harness wrote (the Run fails: nothing is guessed)."""


@dataclass(frozen=True)
class TurnState:
    base: int
    entries: list[Entry]
    rounds: int
    usage: Usage | None
    manifest: dict[str, Any]
    waiting: str | None = None  # the wire call id of the function result waited for
    permission: str | None = None  # the permission request whose decision is waited for


def encode(state: TurnState) -> str | None:
    """The cursor for `state`, or None when it would exceed the wire's bound."""
    body: dict[str, Any] = {
        "v": VERSION,
        "base": state.base,
        "entries": [_entry(entry) for entry in state.entries],
        "rounds": state.rounds,
        "usage": None if state.usage is None else list(_usage(state.usage)),
        "manifest": state.manifest,
        "waiting": state.waiting,
    }
    if state.permission is not None:
        body["permission"] = state.permission
    text = json.dumps(body, separators=(",", ":"))
    return text if len(text.encode()) <= limits.MAX_RESUME_CURSOR_BYTES else None


def decode(cursor: str) -> TurnState:
    """The state a cursor carries; raises CursorInvalid for anything else."""
    try:
        body = json.loads(cursor)
        if body["v"] != VERSION:
            raise CursorInvalid("the checkpoint has an unknown cursor version")
        usage = body["usage"]
        return TurnState(
            base=int(body["base"]),
            entries=[_decoded(item) for item in body["entries"]],
            rounds=int(body["rounds"]),
            usage=None if usage is None else Usage(*(int(n) for n in usage)),
            manifest=dict(body["manifest"]),
            waiting=None if body.get("waiting") is None else str(body["waiting"]),
            permission=None if body.get("permission") is None else str(body["permission"]),
        )
    except (ValueError, KeyError, TypeError, IndexError, AttributeError) as exc:
        raise CursorInvalid("the checkpoint is not a builtin turn's cursor") from exc


def _usage(usage: Usage) -> tuple[int, int, int, int, int]:
    return (
        usage.input_tokens,
        usage.output_tokens,
        usage.total_tokens,
        usage.cached_input_tokens,
        usage.reasoning_output_tokens,
    )


def _entry(entry: Entry) -> list[Any]:
    if isinstance(entry, UserMessage):
        return ["user", list(entry.texts), list(entry.images)]
    if isinstance(entry, AssistantMessage):
        return ["assistant", entry.text]
    if isinstance(entry, ToolCall):
        return ["call", entry.call_id, entry.name, entry.arguments]
    return ["result", entry.call_id, entry.output]


def _decoded(item: list[Any]) -> Entry:
    kind = item[0]
    if kind == "user":
        return UserMessage(tuple(str(t) for t in item[1]), tuple(str(i) for i in item[2]))
    if kind == "assistant":
        return AssistantMessage(str(item[1]))
    if kind == "call":
        return ToolCall(str(item[1]), str(item[2]), str(item[3]))
    if kind == "result":
        return ToolResult(str(item[1]), str(item[2]))
    raise CursorInvalid(f"the checkpoint has an unknown entry kind {str(kind)[:32]!r}")
