"""How Core turns a session's committed items into the history a new Executor rebuilds
its context from: pure functions, no event loop."""

from __future__ import annotations

from typing import Any

from allinone.core.orchestration.context import bounded, encoded_size, history_of
from runtime.proto import codec, limits
from runtime.proto.execution import ExecutionStart
from runtime.proto.history import (
    HistoryAssistant,
    HistoryFunctionCall,
    HistoryFunctionOutput,
    HistoryUser,
    validate_history,
)
from runtime.proto.inputs import InputImage, InputText, Message
from runtime.proto.inputs import encoded_size as input_size


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
    # Bytes are counted as the frame carries them (`encoded_size`: JSON and a comma).
    last = sum(encoded_size(entry) for entry in entries[4:])
    assert bounded(entries, max_bytes=last) == entries[4:]
    assert bounded(entries, max_bytes=last - 1) == []
    assert bounded(entries) == entries  # within the wire's bounds
    assert len(entries) < limits.MAX_HISTORY_ENTRIES


def test_the_history_is_bounded_as_encoded_so_a_start_always_fits_its_frame() -> None:
    """Text that JSON escapes (a control character takes 6 bytes) is counted as the frame
    carries it: with the largest input admission lets in and the largest resume cursor,
    the start still fits the wire's frame, so it is never refused for its size."""
    escaped = '\x01"' * 1024
    rows = [user(f"t{n}", escaped) if n % 2 else assistant(f"t{n}", escaped) for n in range(800)]
    entries, _ = history_of(rows, set())
    history = bounded(entries)
    assert sum(encoded_size(entry) for entry in history) <= limits.MAX_HISTORY_BYTES
    validate_history(history)
    text = "\x01" * ((limits.MAX_INPUT_BYTES - 64) // 6)
    messages = [Message(content=[InputText(text=text)])]
    assert limits.MAX_INPUT_BYTES - 64 < input_size(messages) <= limits.MAX_INPUT_BYTES
    start = ExecutionStart(
        executor_id="e" * limits.MAX_CORRELATION_ID_BYTES,
        handle="h" * limits.MAX_CORRELATION_ID_BYTES,
        run_id="turn_" + "0" * 26,
        input=messages,
        history=history,
        resume="\x01" * limits.MAX_RESUME_CURSOR_BYTES,
    )
    frame = codec.encode_to_send(start, "prep_" + "0" * 26)  # raises past the limit
    assert len(frame) <= limits.MAX_FRAME_BYTES
