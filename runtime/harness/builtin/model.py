"""The model adapter interface (seed 003): one streaming call, in neutral events.

A protocol module (`chat.py`, `responses.py`) turns one model call into this sequence:

    Sent  then  (TextDelta | Reasoning | ToolRequest)*  then  TextDone* and Usage?
    then  Finished

per call, in stream order, with every TextDelta of an item before its TextDone. It
never flattens what it cannot carry: an absent usage report is no Usage event (unknown,
never zero), and a reply cut short is a TextDone with `complete=False` and a Finished
whose reason says why. Provider errors are raised as NativeFailure with the engine
failure code classified from status and error code (errors.py), never from text.
Cancellation closes the HTTP stream and propagates.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any, Protocol

from runtime.harness.builtin.conversation import Entry


@dataclass(frozen=True)
class TextDelta:
    item_id: str
    text: str


@dataclass(frozen=True)
class TextDone:
    item_id: str
    text: str
    complete: bool = True


@dataclass(frozen=True)
class Reasoning:
    item_id: str
    text: str


@dataclass(frozen=True)
class ToolRequest:
    call_id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class Usage:
    input_tokens: int
    output_tokens: int
    total_tokens: int
    cached_input_tokens: int = 0
    reasoning_output_tokens: int = 0


@dataclass(frozen=True)
class Finished:
    reason: str  # stop | tool_calls | length | content_filter | other


@dataclass(frozen=True)
class Sent:
    """The request reached the provider: the digest of the `tools` array it carried
    (`digest_of`) and the provider's request id (`x-request-id`, or "")."""

    tools_digest: str
    request_id: str = ""


Event = Sent | TextDelta | TextDone | Reasoning | ToolRequest | Usage | Finished


def digest_of(value: Any) -> str:
    """`sha256:<hex>` of `value` as canonical JSON (sorted keys, no spaces): what a run
    manifest records of a prompt or a tool list."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


@dataclass(frozen=True)
class ToolSpec:
    """A tool as offered to the model: a function with a JSON Schema."""

    name: str
    description: str
    parameters: dict[str, Any]


@dataclass(frozen=True)
class Settings:
    """Per-call options, already resolved from the execution configuration."""

    model: str
    output_schema: dict[str, Any] | None = None
    verbosity: str = "medium"
    reasoning_effort: str | None = None
    max_output_tokens: int = 0


class ModelProtocol(Protocol):
    name: str  # "chat_completions" or "responses"

    def stream(
        self,
        system_prompt: str,
        entries: list[Entry],
        tools: list[ToolSpec],
        settings: Settings,
    ) -> AsyncIterator[Event]: ...

    async def close(self) -> None: ...
