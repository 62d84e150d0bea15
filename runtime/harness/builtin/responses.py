"""The `responses` protocol: `POST {base_url}/responses` with `stream: true` and
`store: false`, through the official `openai` package.

Mapping (what is not listed is not sent): system prompt -> `instructions`; tools ->
`tools` of type function; structured output -> `text.format` json_schema; a verbosity
other than medium -> `text.verbosity`; reasoning effort -> `reasoning` with summaries
`auto`; max output tokens -> `max_output_tokens`. Events read: output text deltas,
finished output items (messages, function calls, reasoning summaries), and the
terminal `response.completed` / `response.incomplete` / `response.failed` / `error`.
An answer that is not an event stream, or a stream that ends before its terminal event,
fails the call (errors.py); every wait is bounded (timeouts.py).

The body is built here in wire form and sent as `extra_body`, beside `model` and
`stream`: the package's transformation of typed parameters costs about 0.4 ms per input
item (measured: 66 ms for 160 items), which would grow with every turn of a session, and
the dicts built here need none of it.
"""

from __future__ import annotations

import json
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


def input_for(entries: list[Entry]) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for entry in entries:
        if isinstance(entry, UserMessage):
            content: list[dict[str, Any]] = [{"type": "input_text", "text": t} for t in entry.texts]
            content += [
                {"type": "input_image", "image_url": url, "detail": "auto"} for url in entry.images
            ]
            items.append({"type": "message", "role": "user", "content": content})
        elif isinstance(entry, AssistantMessage):
            items.append({"type": "message", "role": "assistant", "content": entry.text})
        elif isinstance(entry, ToolCall):
            items.append(
                {
                    "type": "function_call",
                    "call_id": entry.call_id,
                    "name": entry.name,
                    "arguments": entry.arguments or "{}",
                }
            )
        elif isinstance(entry, ToolResult):
            items.append(
                {"type": "function_call_output", "call_id": entry.call_id, "output": entry.output}
            )
    return items


def request_options(
    system_prompt: str, tools: list[ToolSpec], settings: Settings
) -> dict[str, Any]:
    options: dict[str, Any] = {"store": False}
    if system_prompt:
        options["instructions"] = system_prompt
    if tools:
        options["tools"] = [
            {
                "type": "function",
                "name": t.name,
                "description": t.description,
                "parameters": t.parameters,
                "strict": False,
            }
            for t in tools
        ]
    text: dict[str, Any] = {}
    if settings.output_schema is not None:
        text["format"] = {
            "type": "json_schema",
            "name": "output",
            "schema": settings.output_schema,
            "strict": settings.output_schema.get("additionalProperties") is False,
        }
    if settings.verbosity != "medium":
        text["verbosity"] = settings.verbosity
    if text:
        options["text"] = text
    if settings.reasoning_effort:
        options["reasoning"] = {"effort": settings.reasoning_effort, "summary": "auto"}
    if settings.max_output_tokens:
        options["max_output_tokens"] = settings.max_output_tokens
    return options


class Responses:
    name = "responses"

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
        clock = CallClock(self._timeouts)
        called = False
        try:
            body = request_options(system_prompt, tools, settings)
            body["input"] = input_for(entries)
            stream = await clock.within(
                self._client.responses.create(model=settings.model, stream=True, extra_body=body)
            )
            async with stream:
                errors.require_event_stream(stream.response)
                yield Sent(digest_of(body.get("tools", [])), _request_id(stream))
                async for typed in clock.paced(stream):
                    event: Any = typed  # a union of 60 event types, told apart by `type`
                    for found in _events(event, called):
                        called = called or isinstance(found, ToolRequest)
                        yield found
                        if isinstance(found, Finished):
                            return
        except openai.OpenAIError as exc:
            raise errors.classify(exc) from exc
        except json.JSONDecodeError as exc:
            raise errors.unreadable() from exc
        raise errors.stream_error("stream_ended_early")


def _events(event: Any, called: bool) -> list[Event]:
    """The events one stream event makes (a Finished ends the call); raises the
    failure a `response.failed` or `error` event reports."""
    kind = event.type
    if kind == "response.output_text.delta":
        return [TextDelta(event.item_id, event.delta)]
    if kind == "response.output_item.done":
        found = _item(event.item)
        return [] if found is None else [found]
    if kind in ("response.completed", "response.incomplete"):
        response = event.response
        ending: list[Event] = [] if response.usage is None else [_usage(response.usage)]
        if kind == "response.completed":
            return [*ending, Finished("tool_calls" if called else "stop")]
        details = response.incomplete_details
        reason = details.reason if details is not None else None
        return [*ending, Finished("length" if reason == "max_output_tokens" else "other")]
    if kind == "response.failed":
        error = event.response.error
        raise errors.stream_error(str(error.code) if error is not None else "")
    if kind == "error":
        raise errors.stream_error(event.code or "")
    return []


def _item(item: Any) -> Event | None:
    if item.type == "message":
        text = "".join(
            part.text for part in item.content if getattr(part, "type", "") == "output_text"
        )
        return TextDone(item.id, text, complete=item.status == "completed")
    if item.type == "function_call":
        return ToolRequest(item.call_id, item.name, item.arguments)
    if item.type == "reasoning":
        parts = [s.text for s in item.summary] or [c.text for c in item.content or []]
        text = "\n\n".join(p for p in parts if p)
        return Reasoning(item.id, text) if text else None
    return None


def _usage(counted: Any) -> Usage:
    return Usage(
        input_tokens=counted.input_tokens,
        output_tokens=counted.output_tokens,
        total_tokens=counted.total_tokens,
        cached_input_tokens=counted.input_tokens_details.cached_tokens,
        reasoning_output_tokens=counted.output_tokens_details.reasoning_tokens,
    )


def _request_id(stream: Any) -> str:
    response = getattr(stream, "response", None)
    return str(response.headers.get("x-request-id", "")) if response is not None else ""
