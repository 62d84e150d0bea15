"""The committed conversation Core sends with `execution_start` when the Executor must
rebuild a session's model context (`ExecutionStart.history`).

Core is the record of what a session said: when the Executor that runs a turn is new
(a restart, an eviction, a configuration change) or the session's context changed
under it (a rewind, a fork), Core sends the session's committed items before this
turn, oldest first, as protocol-neutral entries. A start without `history` leaves the
Executor's own memory in place; a start with it (even an empty list) replaces it.

    user                    one user message (text and image parts, in order)
    assistant               one completed assistant reply
    function_call           a tool call the model made (`arguments` is its raw JSON)
    function_call_output    that call's result, as text

Validation (`validate_history`) keeps it bounded (MAX_HISTORY_ENTRIES entries,
MAX_HISTORY_BYTES of text) and requires every output to answer an earlier call; a
failure is `invalid_start`.
"""

from __future__ import annotations

import msgspec

from runtime.proto import limits
from runtime.proto.errors import PreparationErrorCode, ValidationError
from runtime.proto.inputs import InputContent, InputImage, InputText


class HistoryUser(
    msgspec.Struct, frozen=True, forbid_unknown_fields=True, tag="user", tag_field="type"
):
    content: list[InputContent]


class HistoryAssistant(
    msgspec.Struct, frozen=True, forbid_unknown_fields=True, tag="assistant", tag_field="type"
):
    text: str


class HistoryFunctionCall(
    msgspec.Struct,
    frozen=True,
    forbid_unknown_fields=True,
    tag="function_call",
    tag_field="type",
):
    call_id: str
    name: str
    arguments: str


class HistoryFunctionOutput(
    msgspec.Struct,
    frozen=True,
    forbid_unknown_fields=True,
    tag="function_call_output",
    tag_field="type",
):
    call_id: str
    output: str


HistoryEntry = HistoryUser | HistoryAssistant | HistoryFunctionCall | HistoryFunctionOutput


def entry_size(entry: HistoryEntry) -> int:
    """The bytes of text (and image URLs) an entry carries, as counted by the bound."""
    if isinstance(entry, HistoryUser):
        return sum(
            len(part.text.encode()) if isinstance(part, InputText) else len(part.image_url)
            for part in entry.content
            if isinstance(part, InputText | InputImage)
        )
    if isinstance(entry, HistoryAssistant):
        return len(entry.text.encode())
    if isinstance(entry, HistoryFunctionCall):
        return len(entry.name.encode()) + len(entry.arguments.encode())
    return len(entry.output.encode())


def validate_history(entries: list[HistoryEntry]) -> None:
    """Raises ValidationError(`invalid_start`) for a history that is too large, or whose
    function outputs answer no earlier call (or answer one twice)."""
    code = PreparationErrorCode.INVALID_START
    if len(entries) > limits.MAX_HISTORY_ENTRIES:
        raise ValidationError(code, "history has too many entries")
    if sum(entry_size(entry) for entry in entries) > limits.MAX_HISTORY_BYTES:
        raise ValidationError(code, "history is too large")
    calls: set[str] = set()
    answered: set[str] = set()
    for entry in entries:
        if isinstance(entry, HistoryFunctionCall):
            if not entry.call_id or entry.call_id in calls:
                raise ValidationError(code, "history repeats or omits a call id")
            calls.add(entry.call_id)
        elif isinstance(entry, HistoryFunctionOutput):
            if entry.call_id not in calls or entry.call_id in answered:
                raise ValidationError(code, "history has an output without its call")
            answered.add(entry.call_id)
