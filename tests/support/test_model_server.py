"""The test model server emits the real wire formats: every event it streams validates
against the `openai` package's own types, with no field those types do not know (except
`reasoning_content`, the compatible servers' reasoning extension, on purpose)."""

from __future__ import annotations

import json
from typing import Any

import pydantic
import pytest
from openai.types.chat import ChatCompletionChunk
from openai.types.responses import ResponseStreamEvent

from tests.support.model_server import Reply, chat_events, responses_events

REPLIES = [
    pytest.param(Reply.say("Hello there, world"), id="text"),
    pytest.param(Reply.call("get_weather", {"city": "Paris"}), id="call"),
    pytest.param(Reply(text="Let me check", calls=[("a", {}), ("b", {"x": 1})]), id="text+calls"),
    pytest.param(Reply.say("thinking first", reasoning="step one, step two"), id="reasoning"),
    pytest.param(Reply.say("cut sh", finish="length"), id="length"),
    pytest.param(Reply.say("no usage", usage=None), id="no-usage"),
]

EXTENSIONS = {"reasoning_content"}


def _payloads(chunks: list[bytes | None]) -> list[tuple[str | None, str]]:
    found = []
    for chunk in chunks:
        assert chunk is not None
        event = None
        for line in chunk.decode().splitlines():
            if line.startswith("event: "):
                event = line[len("event: ") :]
            elif line.startswith("data: "):
                found.append((event, line[len("data: ") :]))
    return found


def _no_unknown_fields(model: Any, where: str = "$") -> None:
    if isinstance(model, pydantic.BaseModel):
        extra = set(model.model_extra or {}) - EXTENSIONS
        assert not extra, f"{where}: fields the SDK does not know: {sorted(extra)}"
        for name in type(model).model_fields:
            _no_unknown_fields(getattr(model, name), f"{where}.{name}")
    elif isinstance(model, list):
        for index, value in enumerate(model):
            _no_unknown_fields(value, f"{where}[{index}]")


@pytest.mark.parametrize("reply", REPLIES)
def test_chat_chunks_are_real_chat_completion_chunks(reply: Reply) -> None:
    request = {"model": "m", "stream_options": {"include_usage": True}}
    payloads = _payloads(list(chat_events(reply, request)))
    assert payloads[-1] == (None, "[DONE]")
    chunks = [ChatCompletionChunk.model_validate(json.loads(data)) for _, data in payloads[:-1]]
    for chunk in chunks:
        _no_unknown_fields(chunk)
    finishes = [c.choices[0].finish_reason for c in chunks if c.choices]
    assert finishes[-1] == ("tool_calls" if reply.calls else reply.finish)
    usage = [c.usage for c in chunks if c.usage is not None]
    assert len(usage) == (0 if reply.usage is None else 1)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == reply.text


@pytest.mark.parametrize("reply", REPLIES)
def test_responses_events_are_real_response_stream_events(reply: Reply) -> None:
    adapter: pydantic.TypeAdapter[Any] = pydantic.TypeAdapter(ResponseStreamEvent)
    payloads = _payloads(list(responses_events(reply)))
    events = []
    for name, data in payloads:
        event = adapter.validate_python(json.loads(data))
        assert event.type == name
        _no_unknown_fields(event)
        events.append(event)
    assert [e.sequence_number for e in events] == list(range(len(events)))
    assert events[0].type == "response.created"
    assert events[-1].type == (
        "response.incomplete" if reply.finish == "length" else "response.completed"
    )
    assert (events[-1].response.usage is None) == (reply.usage is None)
    text = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    assert text == reply.text


def test_chat_usage_is_left_out_unless_requested() -> None:
    payloads = _payloads(list(chat_events(Reply.say("hi"), {"model": "m"})))
    assert all('"usage": null' in data for _, data in payloads[:-1])
