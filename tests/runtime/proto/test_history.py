"""The committed history a start may carry: decoding and its validator."""

from __future__ import annotations

import msgspec
import pytest

from runtime.proto import limits
from runtime.proto.errors import ValidationError
from runtime.proto.execution import ExecutionStart
from runtime.proto.history import (
    HistoryAssistant,
    HistoryFunctionCall,
    HistoryFunctionOutput,
    HistoryUser,
    validate_history,
)
from runtime.proto.inputs import InputText

START = {
    "executor_id": "e",
    "handle": "h",
    "run_id": "r",
    "input": [{"content": [{"type": "input_text", "text": "next"}]}],
}


def test_a_start_decodes_its_history_in_order() -> None:
    body = {
        **START,
        "history": [
            {"type": "user", "content": [{"type": "input_text", "text": "my name is Ada"}]},
            {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c1", "output": "ok"},
            {"type": "assistant", "text": "Hello Ada."},
        ],
    }
    start = msgspec.json.decode(msgspec.json.encode(body), type=ExecutionStart)
    start.validate()
    assert start.history == [
        HistoryUser(content=[InputText(text="my name is Ada")]),
        HistoryFunctionCall(call_id="c1", name="f", arguments="{}"),
        HistoryFunctionOutput(call_id="c1", output="ok"),
        HistoryAssistant(text="Hello Ada."),
    ]


def test_a_start_without_history_encodes_as_before() -> None:
    start = msgspec.json.decode(msgspec.json.encode(START), type=ExecutionStart)
    assert start.history is None
    assert b"history" not in msgspec.json.encode(start)


def test_an_unknown_entry_field_is_refused() -> None:
    body = {**START, "history": [{"type": "assistant", "text": "x", "extra": 1}]}
    with pytest.raises(msgspec.ValidationError):
        msgspec.json.decode(msgspec.json.encode(body), type=ExecutionStart)


@pytest.mark.parametrize(
    "entries",
    [
        [HistoryFunctionOutput(call_id="c1", output="orphan")],
        [
            HistoryFunctionCall(call_id="c1", name="f", arguments="{}"),
            HistoryFunctionCall(call_id="c1", name="f", arguments="{}"),
        ],
        [
            HistoryFunctionCall(call_id="c1", name="f", arguments="{}"),
            HistoryFunctionOutput(call_id="c1", output="a"),
            HistoryFunctionOutput(call_id="c1", output="b"),
        ],
        [HistoryAssistant(text="x" * (limits.MAX_HISTORY_BYTES + 1))],
        [HistoryAssistant(text="x")] * (limits.MAX_HISTORY_ENTRIES + 1),
    ],
)
def test_a_history_that_breaks_a_rule_is_an_invalid_start(entries: list[object]) -> None:
    with pytest.raises(ValidationError) as raised:
        validate_history(entries)  # type: ignore[arg-type]
    assert raised.value.code == "invalid_start"
