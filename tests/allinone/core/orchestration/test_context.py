"""How Core turns a session's committed items into the history a new Executor rebuilds
its context from: pure functions, no event loop."""

from __future__ import annotations

from typing import Any

from allinone.core.orchestration.context import bounded, history_of
from runtime.proto import limits
from runtime.proto.history import (
    HistoryAssistant,
    HistoryFunctionCall,
    HistoryFunctionOutput,
    HistoryUser,
    validate_history,
)
from runtime.proto.inputs import InputImage, InputText


def item(turn: str, type_: str, **payload: Any) -> dict[str, Any]:
    return {"turn_id": turn, "type": type_, "payload": payload}


def user(turn: str, text: str) -> dict[str, Any]:
    return item(turn, "message", role="user", content=[{"type": "input_text", "text": text}])


def assistant(turn: str, text: str) -> dict[str, Any]:
    return item(turn, "message", role="assistant", content=[{"type": "output_text", "text": text}])


def test_messages_and_function_calls_are_carried_in_order() -> None:
    rows = [
        item(
            "t1",
            "message",
            role="user",
            content=[
                {"type": "input_text", "text": "look"},
                {"type": "input_image", "image_url": "data:image/png;base64,AA=="},
            ],
        ),
        item("t1", "reasoning", summary=[{"type": "summary_text", "text": "hm"}]),
        item("t1", "function_call", call_id="c1", name="f", arguments="{}"),
        item("t1", "function_call_output", call_id="c1", output="ok", error=None),
        item("t1", "command_execution", command="ls", output="x"),
        assistant("t1", "done"),
    ]
    entries, omitted = history_of(rows, set())
    assert entries == [
        HistoryUser(
            content=[InputText(text="look"), InputImage(image_url="data:image/png;base64,AA==")]
        ),
        HistoryFunctionCall(call_id="c1", name="f", arguments="{}"),
        HistoryFunctionOutput(call_id="c1", output="ok"),
        HistoryAssistant(text="done"),
    ]
    assert omitted == 2  # the reasoning and the command observation
    validate_history(entries)


def test_hidden_turns_and_orphan_outputs_are_left_out() -> None:
    rows = [
        user("t1", "one"),
        assistant("t1", "reply 1"),
        user("t2", "two"),
        item("t2", "function_call", call_id="c2", name="f", arguments="{}"),
        item("t3", "function_call_output", call_id="c2", output="late", error=None),
        item("t3", "function_call_output", call_id="c9", output="never called", error=None),
        user("t3", "three"),
    ]
    entries, omitted = history_of(rows, {"t2"})
    assert entries == [
        HistoryUser(content=[InputText(text="one")]),
        HistoryAssistant(text="reply 1"),
        HistoryUser(content=[InputText(text="three")]),
    ]
    assert omitted == 4
    validate_history(entries)


def test_a_failed_function_result_carries_its_error_text() -> None:
    rows = [
        item("t1", "function_call", call_id="c1", name="f", arguments="{}"),
        item("t1", "function_call_output", call_id="c1", output=None, error="boom"),
    ]
    entries, _ = history_of(rows, set())
    assert entries[-1] == HistoryFunctionOutput(call_id="c1", output="boom")


def test_past_the_bound_the_oldest_exchanges_go_whole() -> None:
    entries = [
        HistoryUser(content=[InputText(text="one")]),
        HistoryFunctionCall(call_id="c1", name="f", arguments="{}"),
        HistoryFunctionOutput(call_id="c1", output="ok"),
        HistoryAssistant(text="reply 1"),
        HistoryUser(content=[InputText(text="two")]),
        HistoryAssistant(text="reply 2"),
    ]
    assert bounded(entries, max_entries=4) == entries[4:]
    assert bounded(entries, max_bytes=len("two") + len("reply 2")) == entries[4:]
    assert bounded(entries) == entries  # within the wire's bounds
    assert len(entries) < limits.MAX_HISTORY_ENTRIES
