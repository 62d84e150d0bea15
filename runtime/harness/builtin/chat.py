"""The `chat_completions` protocol: `POST {base_url}/chat/completions` with `stream: true`,
through the official `openai` package.

Mapping (what is not listed is not sent): system prompt -> a `system` message; tools ->
`tools` of type function; structured output -> `response_format` json_schema; reasoning
effort -> `reasoning_effort`; max output tokens -> `max_completion_tokens`. Text verbosity
has no portable chat control and is not sent (the matrix labels it lossy). Reasoning
text is read from the `reasoning_content` or `reasoning` delta field that several
OpenAI-compatible servers add. Usage is requested with `stream_options.include_usage`.
A reply is whole once a choice carried its `finish_reason`; an answer that is not an
event stream, or a stream that ends before that, fails the call (errors.py). Every wait
is bounded (timeouts.py).

The body is built here in wire form and sent as `extra_body`, beside `model` and
`stream`: the package's transformation of typed parameters costs about 0.2 ms per
conversation entry (measured: 24 ms for 160 messages), which would grow with every turn
of a session, and the dicts built here need none of it.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import AsyncIterator
from typing import Any

import openai

from runtime.harness.builtin import errors
from runtime.harness.builtin.conversation import (
    AssistantMessage,
    Entry,
    ToolCall,
    ToolResult,
    UserMessage,
)
from runtime.harness.builtin.model import (
    Event,
    Finished,
    Reasoning,
    Sent,
    Settings,
    TextDelta,
    TextDone,
    ToolRequest,
    ToolSpec,
    Usage,
    digest_of,
)
from runtime.harness.builtin.timeouts import CallClock, ModelTimeouts

REASONING_FIELDS = ("reasoning_content", "reasoning")


def messages_for(system_prompt: str, entries: list[Entry]) -> list[dict[str, Any]]:
    """The `messages` array: an assistant's text and its tool calls form one message,
    followed by one `tool` message per result."""
    messages: list[dict[str, Any]] = []
    if system_prompt:
        messages.append({"role": "system", "content": system_prompt})
    assistant: dict[str, Any] | None = None
    for entry in entries:
        if isinstance(entry, AssistantMessage | ToolCall):
            if assistant is None:
                assistant = {"role": "assistant", "content": None}
                messages.append(assistant)
            if isinstance(entry, AssistantMessage):
                assistant["content"] = (assistant["content"] or "") + entry.text
            else:
                assistant.setdefault("tool_calls", []).append(
                    {
                        "id": entry.call_id,
                        "type": "function",
                        "function": {"name": entry.name, "arguments": entry.arguments or "{}"},
                    }
                )
            continue
        assistant = None
        if isinstance(entry, ToolResult):
            messages.append(
                {"role": "tool", "tool_call_id": entry.call_id, "content": entry.output}
            )
        elif isinstance(entry, UserMessage):
            messages.append({"role": "user", "content": _user_content(entry)})
    return messages


def _user_content(message: UserMessage) -> str | list[dict[str, Any]]:
    if not message.images:
        return "\n".join(message.texts)
    parts: list[dict[str, Any]] = [{"type": "text", "text": t} for t in message.texts]
    parts += [{"type": "image_url", "image_url": {"url": url}} for url in message.images]
    return parts


def request_options(tools: list[ToolSpec], settings: Settings) -> dict[str, Any]:
    options: dict[str, Any] = {"stream_options": {"include_usage": True}}
    if tools:
        options["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": t.name,
                    "description": t.description,
                    "parameters": t.parameters,
                },
            }
            for t in tools
        ]
    if settings.output_schema is not None:
        options["response_format"] = {
            "type": "json_schema",
            "json_schema": {
                "name": "output",
                "schema": settings.output_schema,
                "strict": settings.output_schema.get("additionalProperties") is False,
            },
        }
    if settings.reasoning_effort:
        options["reasoning_effort"] = settings.reasoning_effort
    if settings.max_output_tokens:
        options["max_completion_tokens"] = settings.max_output_tokens
    return options


class ChatCompletions:
    name = "chat_completions"

    def __init__(self, client: openai.AsyncOpenAI, timeouts: ModelTimeouts | None = None) -> None:
        self._client = client
        self._timeouts = timeouts or ModelTimeouts()

    async def close(self) -> None:
        await self._client.close()

    async def stream(
        self,
        system_prompt: str,
        entries: list[Entry],
        tools: list[ToolSpec],
        settings: Settings,
    ) -> AsyncIterator[Event]:
        """One call. A stream that ends before a choice carried its `finish_reason` was
        cut short: it fails as `stream_ended_early`, as the responses protocol does."""
        clock = CallClock(self._timeouts)
        reply = _Reply()
        try:
            body = request_options(tools, settings)
            body["messages"] = messages_for(system_prompt, entries)
            stream = await clock.within(
                self._client.chat.completions.create(
                    model=settings.model,
                    messages=[],  # replaced by extra_body["messages"] (see the module docstring)
                    stream=True,
                    extra_body=body,
                )
            )
            async with stream:
                errors.require_event_stream(stream.response)
                yield Sent(digest_of(body.get("tools", [])), _request_id(stream))
                async for chunk in clock.paced(stream):
                    for event in reply.take(chunk):
                        yield event
        except openai.OpenAIError as exc:
            raise errors.classify(exc) from exc
        except json.JSONDecodeError as exc:
            raise errors.unreadable() from exc
        if not reply.finish:
            raise errors.stream_error("stream_ended_early")
        for event in reply.ending():
            yield event


class _Reply:
    """What one call's chunks said so far."""

    def __init__(self) -> None:
        self.item_id = f"chatmsg_{secrets.token_hex(8)}"
        self.reasoning_id = f"chatrs_{secrets.token_hex(8)}"
        self.text: list[str] = []
        self.reasoning: list[str] = []
        self.reasoning_sent = False
        self.calls: dict[int, dict[str, str]] = {}
        self.finish = ""
        self.usage: Usage | None = None

    def take(self, chunk: Any) -> list[Event]:
        """The events one chunk makes (the reasoning gathered so far goes out before
        the first text or tool call)."""
        if chunk.usage is not None:
            self.usage = _usage(chunk.usage)
        events: list[Event] = []
        for choice in chunk.choices[:1]:
            delta = choice.delta
            thought = _thought(delta)
            if thought:
                self.reasoning.append(thought)
            if (delta.content or delta.tool_calls) and self.reasoning and not self.reasoning_sent:
                self.reasoning_sent = True
                events.append(Reasoning(self.reasoning_id, "".join(self.reasoning)))
            if delta.content:
                self.text.append(delta.content)
                events.append(TextDelta(self.item_id, delta.content))
            _gather_calls(self.calls, delta.tool_calls or [])
            if choice.finish_reason:
                self.finish = choice.finish_reason
        return events

    def ending(self) -> list[Event]:
        """The events after the last chunk: the reply's text, its tool calls, its usage
        and how it finished."""
        events: list[Event] = []
        if self.reasoning and not self.reasoning_sent:
            events.append(Reasoning(self.reasoning_id, "".join(self.reasoning)))
        if self.text:
            events.append(TextDone(self.item_id, "".join(self.text), self.finish != "length"))
        for index in sorted(self.calls):
            slot = self.calls[index]
            call_id = slot["id"] or f"call_{secrets.token_hex(8)}"
            events.append(ToolRequest(call_id, slot["name"], slot["args"]))
        if self.usage is not None:
            events.append(self.usage)
        events.append(Finished(_reason(self.finish, bool(self.calls))))
        return events


def _thought(delta: Any) -> str:
    """The reasoning text a provider put in one of the non-standard delta fields."""
    extra = delta.model_extra or {}
    return next((extra[f] for f in REASONING_FIELDS if isinstance(extra.get(f), str)), "")


def _gather_calls(calls: dict[int, dict[str, str]], deltas: list[Any]) -> None:
    """Add streamed tool-call fragments to the call at their index."""
    for call in deltas:
        slot = calls.setdefault(call.index, {"id": "", "name": "", "args": ""})
        if call.id:
            slot["id"] = call.id
        if call.function is not None:
            slot["name"] += call.function.name or ""
            slot["args"] += call.function.arguments or ""


def _usage(counted: Any) -> Usage:
    prompt = counted.prompt_tokens_details
    completion = counted.completion_tokens_details
    return Usage(
        input_tokens=counted.prompt_tokens,
        output_tokens=counted.completion_tokens,
        total_tokens=counted.total_tokens,
        cached_input_tokens=(prompt.cached_tokens or 0) if prompt is not None else 0,
        reasoning_output_tokens=(completion.reasoning_tokens or 0) if completion is not None else 0,
    )


def _reason(finish: str, called: bool) -> str:
    if called:
        return "tool_calls"
    if finish in ("stop", "length", "content_filter"):
        return finish
    return "stop" if not finish else "other"


def _request_id(stream: Any) -> str:
    response = getattr(stream, "response", None)
    return str(response.headers.get("x-request-id", "")) if response is not None else ""
