"""The model context a turn starts with: when the Executor must rebuild it, and from what.

A builtin Executor keeps the session's conversation in memory. Core's committed items
are the record, so Core sends them with `execution_start` (`ExecutionStart.history`)
when that memory cannot be trusted:

    the Executor is new (`ready` not `reused`): a restart, an eviction, a configuration
        change, a fork (a new session)
    a rewind marker was made since the session's previous turn began: the memory still
        holds the turns the rewind hid

and sends nothing otherwise (nor for a session's first turn). The history is the
session's items before this turn, oldest first, without the turns rewinds hid:
messages, and function calls with their outputs; other items (reasoning, command and
MCP tool observations) are omitted. Past the wire bounds the oldest exchanges are
dropped whole (starting again at a user message).

What was decided is recorded on the turn as `x_corebox.context`:
`{"rebuilt", "items_included", "items_omitted", "turns_hidden"}`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import msgspec

from allinone.core.sessions.wire import content_parts
from runtime.proto import limits
from runtime.proto.history import (
    HistoryAssistant,
    HistoryEntry,
    HistoryFunctionCall,
    HistoryFunctionOutput,
    HistoryUser,
)
from storage import items, rewinds, turns
from storage.rows import Queryable

_encoder = msgspec.json.Encoder()


@dataclass(frozen=True)
class TurnContext:
    history: list[HistoryEntry] | None  # None: the Executor keeps its own memory
    record: dict[str, Any]


async def decide(q: Queryable, session_id: str, turn_id: str, reused: bool) -> TurnContext:
    """The context `turn_id` starts with, on an Executor that was `reused` or not."""
    previous = await turns.previous_created_at(q, session_id, turn_id)
    hidden = await rewinds.hidden_turn_ids(q, session_id)
    rebuild = previous is not None and (
        not reused or await rewinds.any_since(q, session_id, previous)
    )
    if not rebuild:
        kept_memory: dict[str, Any] = {"rebuilt": False, "items_included": None}
        return TurnContext(
            None, {**kept_memory, "items_omitted": None, "turns_hidden": len(hidden)}
        )
    rows = await items.of_session_before(q, session_id, turn_id)
    entries, omitted = history_of(rows, hidden)
    kept = bounded(entries)
    record: dict[str, Any] = {
        "rebuilt": True,
        "items_included": len(kept),
        "items_omitted": omitted + len(entries) - len(kept),
        "turns_hidden": len(hidden),
    }
    return TurnContext(kept, record)


def history_of(rows: list[dict[str, Any]], hidden: set[str]) -> tuple[list[HistoryEntry], int]:
    """The history entries of the visible rows, and how many rows were left out."""
    entries: list[HistoryEntry] = []
    calls: set[str] = set()
    answered: set[str] = set()
    for row in rows:
        entry = None if row["turn_id"] in hidden else _entry(row)
        if isinstance(entry, HistoryFunctionCall):
            entry = None if entry.call_id in calls else entry
            calls.add(row["payload"]["call_id"])
        elif isinstance(entry, HistoryFunctionOutput):
            if entry.call_id not in calls or entry.call_id in answered:
                entry = None
            else:
                answered.add(entry.call_id)
        if entry is not None:
            entries.append(entry)
    return entries, len(rows) - len(entries)


def encoded_size(entry: HistoryEntry) -> int:
    """The bytes `entry` takes in `execution_start.history`: its JSON (escapes and keys
    included, so never less than the text `history.entry_size` counts) and a comma."""
    return len(_encoder.encode(entry)) + 1


def bounded(
    entries: list[HistoryEntry],
    max_entries: int = limits.MAX_HISTORY_ENTRIES,
    max_bytes: int = limits.MAX_HISTORY_BYTES,
) -> list[HistoryEntry]:
    """The most recent entries within the bounds (the wire's by default), starting at a
    user message. Bytes are counted as encoded (`encoded_size`), so the history a start
    carries stays within the frame budget of `limits.MAX_INPUT_BYTES`."""
    sizes = [encoded_size(entry) for entry in entries]
    total = sum(sizes)
    start = 0
    while start < len(entries) and (len(entries) - start > max_entries or total > max_bytes):
        total -= sizes[start]
        start += 1
        while start < len(entries) and not isinstance(entries[start], HistoryUser):
            total -= sizes[start]
            start += 1
    kept = entries[start:]
    calls = {e.call_id for e in kept if isinstance(e, HistoryFunctionCall)}
    return [e for e in kept if not isinstance(e, HistoryFunctionOutput) or e.call_id in calls]


def _entry(row: dict[str, Any]) -> HistoryEntry | None:
    payload = row["payload"]
    kind = row["type"]
    if kind == "message":
        if payload.get("role") == "user":
            parts = content_parts(
                [p for p in payload["content"] if p.get("type") in ("input_text", "input_image")]
            )
            return HistoryUser(content=parts) if parts else None
        text = "".join(p.get("text", "") for p in payload.get("content") or [])
        return HistoryAssistant(text=text) if text else None
    if kind == "function_call":
        return HistoryFunctionCall(
            call_id=payload["call_id"], name=payload["name"], arguments=payload["arguments"]
        )
    if kind == "function_call_output":
        return HistoryFunctionOutput(call_id=payload["call_id"], output=_output_text(payload))
    return None


def _output_text(payload: dict[str, Any]) -> str:
    output = payload.get("output")
    if isinstance(output, str):
        return output
    if isinstance(output, list):
        return "".join(str(part.get("text", "")) for part in output if isinstance(part, dict))
    return str(payload.get("error") or "")
