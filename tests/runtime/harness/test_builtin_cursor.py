"""The builtin turn's resume cursor: what it carries survives the round trip, a state
past the wire's bound gives no cursor, and anything else is refused."""

from __future__ import annotations

import pytest

from runtime.harness.builtin import cursor
from runtime.harness.builtin.conversation import (
    AssistantMessage,
    ToolCall,
    ToolResult,
    UserMessage,
)
from runtime.harness.builtin.model import Usage
from runtime.proto import limits

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
