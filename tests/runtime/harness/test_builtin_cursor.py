"""The builtin turn's resume cursor: what it carries survives the round trip, a state
past the wire's bound gives no cursor, and anything else is refused."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace

import pytest

from runtime.harness.base import NativeFailure
from runtime.harness.builtin import cursor
from runtime.harness.builtin.conversation import (
    AssistantMessage,
    ToolCall,
    ToolResult,
    UserMessage,
)
from runtime.harness.builtin.model import Usage
from runtime.proto import limits
from tests.runtime.harness.builtin_support import WEATHER, Recording, configuration
from tests.runtime.harness.test_builtin import play
from tests.support.model_server import ModelServer, Reply

USAGE = Usage(3, 2, 5, 1, 0)


def state(text: str = "look it up", usage: Usage | None = USAGE) -> cursor.TurnState:
    return cursor.TurnState(
        base=4,
        entries=[
            UserMessage((text,), ("data:image/png;base64,AA",)),
            AssistantMessage("calling"),
            ToolCall("call_1", "lookup", '{"q": 1}'),
            ToolResult("call_1", "forty-two"),
        ],
        rounds=1,
        usage=usage,
        manifest={"tools_digest": "sha256:x", "request_ids": ["req_1"]},
    )


@pytest.mark.parametrize("usage", [Usage(3, 2, 5, 1, 0), None])
def test_a_cursor_carries_the_turn_back(usage: Usage | None) -> None:
    original = state(usage=usage)
    text = cursor.encode(original)
    assert text is not None
    assert cursor.decode(text) == original


@pytest.mark.parametrize(("waiting", "permission"), [("call_9", None), (None, "perm_1")])
def test_a_cursor_carries_what_the_turn_waits_for(
    waiting: str | None, permission: str | None
) -> None:
    original = replace(state(), waiting=waiting, permission=permission)
    text = cursor.encode(original)
    assert text is not None
    assert cursor.decode(text) == original
    assert ("permission" in json.loads(text)) is (permission is not None)


def test_a_state_past_the_bound_gives_no_cursor() -> None:
    assert cursor.encode(state("x" * limits.MAX_RESUME_CURSOR_BYTES)) is None


@pytest.mark.parametrize(
    "text",
    [
        "",
        "[]",
        '{"v": 2}',
        '{"v": 1, "base": 0, "entries": [["odd"]], "rounds": 0, "usage": null, "manifest": {}}',
        "{not json",
    ],
)
def test_anything_else_is_refused(text: str) -> None:
    with pytest.raises(cursor.CursorInvalid):
        cursor.decode(text)


@pytest.fixture
def model() -> Iterator[ModelServer]:
    with ModelServer().running() as server:
        yield server


def test_a_turn_checkpoints_around_its_calls_and_continues_from_each(
    model: ModelServer,
) -> None:
    """Checkpoints: before the first model call, while the function result is awaited,
    before the second model call. A new Executor resumed from the wait takes the
    result it is given; one resumed before the second call makes only that call. Each
    second model request carries the turn's whole conversation, the call once."""
    cfg = configuration(model.base_url, functions=[WEATHER])
    model.queue(Reply.call("get_weather", {"city": "Oslo"}), Reply.say("Sunny"))
    first = play(cfg, "weather?")
    assert [boundary for boundary, _ in first.checkpoints] == [
        "between_model_calls",
        "awaiting_function_result",
        "between_model_calls",
    ]
    waiting = cursor.decode(first.checkpoints[1][1]).waiting
    assert waiting is not None
    model.queue(Reply.say("Sunny"), Reply.say("Sunny"))
    from_wait = Recording(resume_cursor=first.checkpoints[1][1])
    from_wait.results[waiting] = (True, "12 degrees")
    play(cfg, "weather?", context=from_wait)
    before_second = Recording(resume_cursor=first.checkpoints[2][1])
    play(cfg, "weather?", context=before_second)
    assert len(model.requests) == 4
    assert from_wait.calls == [] and before_second.calls == []  # no call runs again
    for request, result in ((model.requests[2], "12 degrees"), (model.requests[3], "ok")):
        sent = json.dumps(request.body["messages"])
        assert sent.count("weather?") == 1 and sent.count("get_weather") == 1
        assert result in sent
    assert from_wait.of("output_message")[-1].text == "Sunny"


def test_a_cursor_that_is_not_one_fails_the_turn(model: ModelServer) -> None:
    with pytest.raises(NativeFailure):
        play(configuration(model.base_url), "hi", context=Recording(resume_cursor="{}"))
    assert model.requests == []
