"""The conversation of one session, in protocol-neutral entries.

The builtin harness keeps it in the Executor (the Runtime's memory), so later turns of
the session see the earlier ones. When the Executor is new (a restart, an eviction, a
configuration change) or the session's context changed (a rewind, a fork), Core sends
the session's committed history with the start and `rebuild` replaces the memory with
it. Each protocol module translates the entries to its own request shape.

Invariant kept by `settle`: every tool call has exactly one result, so a turn that was
cancelled or failed between a call and its result never leaves a request the provider
would reject.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from runtime.proto.history import (
    HistoryAssistant,
    HistoryEntry,
    HistoryFunctionCall,
    HistoryFunctionOutput,
)
from runtime.proto.inputs import InputImage, InputText, MessageInput

CHARS_PER_TOKEN = 4  # a rough estimate, used only to keep within a declared context window


@dataclass(frozen=True)
class UserMessage:
    texts: tuple[str, ...]
    images: tuple[str, ...] = ()  # image URLs (http(s) or data URLs)


@dataclass(frozen=True)
class AssistantMessage:
    text: str


@dataclass(frozen=True)
class ToolCall:
    call_id: str  # the model's own call id
    name: str
    arguments: str  # the model's raw JSON text


@dataclass(frozen=True)
class ToolResult:
    call_id: str
    output: str


Entry = UserMessage | AssistantMessage | ToolCall | ToolResult

CANCELLED_RESULT = "The tool call did not finish: the turn was interrupted."


@dataclass
class Conversation:
    system_prompt: str = ""
    entries: list[Entry] = field(default_factory=list)

    def add_input(self, messages: MessageInput) -> None:
        """Add the user's messages (text and images, in order)."""
        for message in messages:
            texts = tuple(p.text for p in message.content if isinstance(p, InputText))
            images = tuple(p.image_url for p in message.content if isinstance(p, InputImage))
            self.entries.append(UserMessage(texts, images))

    def rebuild(self, history: list[HistoryEntry]) -> None:
        """Replace the entries with Core's committed history (oldest first); a call the
        history leaves unanswered is settled."""
        self.entries = [_entry(item) for item in history]
        self.settle()

    def add(self, entry: Entry) -> None:
        self.entries.append(entry)

    def settle(self) -> None:
        """Give every tool call without a result a result saying it did not finish."""
        answered = {e.call_id for e in self.entries if isinstance(e, ToolResult)}
        for index in range(len(self.entries) - 1, -1, -1):
            entry = self.entries[index]
            if isinstance(entry, ToolCall) and entry.call_id not in answered:
                answered.add(entry.call_id)
                position = index + 1
                while position < len(self.entries) and isinstance(
                    self.entries[position], ToolCall | ToolResult
                ):
                    position += 1
                self.entries.insert(position, ToolResult(entry.call_id, CANCELLED_RESULT))

    def window(self, context_window: int, max_output_tokens: int) -> list[Entry]:
        """The entries to send: all of them, or, when a context window is declared and
        the estimate exceeds it, the most recent ones starting at a user message (the
        oldest exchanges are dropped whole; the last user message is always kept)."""
        if context_window <= 0:
            return list(self.entries)
        budget = max(context_window - max_output_tokens, 0) * CHARS_PER_TOKEN
        budget -= len(self.system_prompt)
        starts = [i for i, e in enumerate(self.entries) if isinstance(e, UserMessage)]
        for start in starts:
            if _size(self.entries[start:]) <= budget:
                return self.entries[start:]
        return self.entries[starts[-1] :] if starts else list(self.entries)


def _entry(item: HistoryEntry) -> Entry:
    if isinstance(item, HistoryAssistant):
        return AssistantMessage(item.text)
    if isinstance(item, HistoryFunctionCall):
        return ToolCall(item.call_id, item.name, item.arguments)
    if isinstance(item, HistoryFunctionOutput):
        return ToolResult(item.call_id, item.output)
    texts = tuple(p.text for p in item.content if isinstance(p, InputText))
    images = tuple(p.image_url for p in item.content if isinstance(p, InputImage))
    return UserMessage(texts, images)


def _size(entries: list[Entry]) -> int:
    total = 0
    for entry in entries:
        if isinstance(entry, UserMessage):
            total += sum(len(t) for t in entry.texts) + 1000 * len(entry.images)
        elif isinstance(entry, AssistantMessage):
            total += len(entry.text)
        elif isinstance(entry, ToolCall):
            total += len(entry.name) + len(entry.arguments)
        else:
            total += len(entry.output)
    return total
