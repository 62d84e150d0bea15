"""The builtin harness against the loopback model server, without Core: frames, tool
round trips, structured output, steering, memory, usage, cancellation and the
classification of provider errors."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import Iterator
from typing import Any

import pytest

from runtime.harness.base import NativeFailure
from runtime.proto.history import (
    HistoryAssistant,
    HistoryEntry,
    HistoryFunctionCall,
    HistoryFunctionOutput,
    HistoryUser,
)
from runtime.proto.inputs import InputText
from tests.runtime.harness.builtin_support import (
    WEATHER,
    Recording,
    configuration,
    executor,
    text,
)
from tests.support.model_server import ModelServer, Reply

PROTOCOLS = ["chat_completions", "responses"]


@pytest.fixture
def model() -> Iterator[ModelServer]:
    with ModelServer().running() as server:
        yield server


def play(cfg: Any, *inputs: str, context: Recording | None = None) -> Recording:
    context = context or Recording()

    async def main() -> None:
        run = await executor(cfg)
        try:
            for value in inputs:
                await run.run("run_1", text(value), context)
        finally:
            await run.close()

    asyncio.run(main())
    return context


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_reply_streams_as_an_output_message_with_deltas_then_usage(
    model: ModelServer, protocol: str
) -> None:
    model.queue(Reply.say("Hello there", usage=(20, 3)))
    context = play(configuration(model.base_url, protocol), "hi")
    assert context.types() == [
        "output_message",
        "delta",
        "delta",
        "delta",
        "output_message",
        "usage",
    ]
    opened, *_, closed = context.of("output_message")
    assert opened.status == "in_progress" and opened.phase == ""
    assert (closed.status, closed.phase, closed.text) == (
        "completed",
        "final_answer",
        "Hello there",
    )
    deltas = context.of("delta")
    assert "".join(d.delta for d in deltas) == "Hello there"
    assert [d.sequence for d in deltas] == [1, 2, 3]
    assert {d.item_id for d in deltas} == {closed.id}
    usage = context.of("usage")[0]
    assert (usage.tokens.input_tokens, usage.tokens.output_tokens) == (20, 3)
    assert usage.provider == f"builtin:{protocol}" and usage.model == "test-model"
    seen = model.requests[0]
    assert seen.authorization == "Bearer sk-test-secret"
    assert seen.body["model"] == "test-model" and seen.body["stream"] is True


def test_chat_sends_the_system_prompt_and_asks_for_usage(model: ModelServer) -> None:
    model.queue(Reply.say("ok"))
    play(configuration(model.base_url, max_output_tokens=50), "hi")
    body = model.requests[0].body
    assert body["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "hi"},
    ]
    assert body["stream_options"] == {"include_usage": True}
    assert body["max_completion_tokens"] == 50
    assert "tools" not in body and "response_format" not in body


def test_responses_sends_instructions_and_does_not_store(model: ModelServer) -> None:
    model.queue(Reply.say("ok"))
    play(configuration(model.base_url, "responses", verbosity="low"), "hi")
    body = model.requests[0].body
    assert body["instructions"] == "Be brief."
    assert body["store"] is False
    assert body["text"] == {"verbosity": "low"}
    assert body["input"] == [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}
    ]


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_function_call_waits_for_its_result_and_the_loop_continues(
    model: ModelServer, protocol: str
) -> None:
    model.queue(Reply.call("get_weather", {"city": "Paris"}), Reply.say("It is sunny."))
    context = Recording(functions=lambda name, args: (True, '{"forecast": "sunny"}'))
    play(configuration(model.base_url, protocol, functions=[WEATHER]), "weather?", context=context)
    assert context.calls == [("get_weather", '{"city": "Paris"}')]
    final = context.of("output_message")[-1]
    assert (final.phase, final.text) == ("final_answer", "It is sunny.")
    first, second = (r.body for r in model.requests)
    if protocol == "chat_completions":
        assert first["tools"][0]["function"]["name"] == "get_weather"
        assistant, result = second["messages"][-2:]
        assert assistant["tool_calls"][0]["function"] == {
            "name": "get_weather",
            "arguments": '{"city": "Paris"}',
        }
        assert result == {
            "role": "tool",
            "tool_call_id": assistant["tool_calls"][0]["id"],
            "content": '{"forecast": "sunny"}',
        }
    else:
        assert first["tools"][0]["name"] == "get_weather"
        call, result = second["input"][-2:]
        assert call["type"] == "function_call" and call["name"] == "get_weather"
        assert result == {
            "type": "function_call_output",
            "call_id": call["call_id"],
            "output": '{"forecast": "sunny"}',
        }
    # Two model calls, each reported: a cumulative usage frame after each, the last
    # their sum.
    counted = [(u.tokens.input_tokens, u.tokens.total_tokens) for u in context.of("usage")]
    assert counted == [(12, 19), (24, 38)]


def test_text_before_a_tool_call_is_commentary(model: ModelServer) -> None:
    model.queue(
        Reply(text="Checking.", calls=[("get_weather", {"city": "Oslo"})]), Reply.say("Cold.")
    )
    context = play(configuration(model.base_url, functions=[WEATHER]), "weather?")
    done = [m for m in context.of("output_message") if m.status == "completed"]
    assert [(m.phase, m.text) for m in done] == [
        ("commentary", "Checking."),
        ("final_answer", "Cold."),
    ]


def test_a_failed_function_result_is_passed_back_as_an_error(model: ModelServer) -> None:
    model.queue(Reply.call("get_weather", {"city": "X"}), Reply.say("Sorry."))
    context = Recording(functions=lambda name, args: (False, "Tool handler failed."))
    play(configuration(model.base_url, functions=[WEATHER]), "weather?", context=context)
    assert model.requests[1].body["messages"][-1]["content"] == "error: Tool handler failed."


def test_an_unknown_tool_or_bad_arguments_go_back_to_the_model(model: ModelServer) -> None:
    model.queue(Reply.call("nope", {}), Reply.say("Fine."))
    context = play(configuration(model.base_url, functions=[WEATHER]), "go")
    assert context.calls == []
    assert "no tool named 'nope'" in model.requests[1].body["messages"][-1]["content"]


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_structured_output_sends_the_schema(model: ModelServer, protocol: str) -> None:
    schema = {
        "type": "object",
        "properties": {"answer": {"type": "integer"}},
        "required": ["answer"],
        "additionalProperties": False,
    }
    model.queue(Reply.say('{"answer": 42}'))
    context = play(configuration(model.base_url, protocol, schema=schema), "6 x 7?")
    body = model.requests[0].body
    if protocol == "chat_completions":
        assert body["response_format"] == {
            "type": "json_schema",
            "json_schema": {"name": "output", "schema": schema, "strict": True},
        }
    else:
        assert body["text"]["format"] == {
            "type": "json_schema",
            "name": "output",
            "schema": schema,
            "strict": True,
        }
    assert json.loads(context.of("output_message")[-1].text) == {"answer": 42}


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_reasoning_becomes_thinking(model: ModelServer, protocol: str) -> None:
    model.queue(Reply.say("42", reasoning="six sevens"))
    context = play(configuration(model.base_url, protocol, reasoning_effort="low"), "q")
    assert [t.text for t in context.of("thinking")] == ["six sevens"]
    assert context.types().index("thinking") < context.types().index("delta")
    body = model.requests[0].body
    if protocol == "responses":
        assert body["reasoning"] == {"effort": "low", "summary": "auto"}
    else:
        assert body["reasoning_effort"] == "low"


def test_a_reply_cut_short_is_incomplete(model: ModelServer) -> None:
    model.queue(Reply.say("Once upon", finish="length"))
    context = play(configuration(model.base_url, "responses"), "story")
    assert context.of("output_message")[-1].status == "incomplete"


def test_usage_stops_at_the_first_model_call_that_did_not_report_it(model: ModelServer) -> None:
    # The total is unknown from then on: nothing more is reported (the first call's
    # report stands, as what is known to have been used).
    model.queue(Reply.call("get_weather", {"city": "Rome"}), Reply.say("Warm.", usage=None))
    context = play(configuration(model.base_url, functions=[WEATHER]), "weather?")
    assert [u.tokens.total_tokens for u in context.of("usage")] == [19]


def test_usage_is_absent_when_the_first_model_call_did_not_report_it(model: ModelServer) -> None:
    model.queue(Reply.call("get_weather", {"city": "Rome"}, usage=None), Reply.say("Warm."))
    context = play(configuration(model.base_url, functions=[WEATHER]), "weather?")
    assert context.of("usage") == []


def test_steered_input_is_added_before_the_next_model_call(model: ModelServer) -> None:
    model.queue(Reply.say("First."), Reply.say("Second."))
    context = Recording(steered=[])

    async def main() -> None:
        run = await executor(configuration(model.base_url))
        try:
            # The steer is written while the first model call streams: it is taken
            # after that call, so the loop makes one more call that includes it.
            async def steer() -> None:
                await context.first_delta.wait()
                context.steered.append(text("and more"))

            await asyncio.gather(run.run("run_1", text("hi"), context), steer())
        finally:
            await run.close()

    asyncio.run(main())
    assert len(model.requests) == 2
    assert model.requests[1].body["messages"][-2:] == [
        {"role": "assistant", "content": "First."},
        {"role": "user", "content": "and more"},
    ]


def test_the_session_remembers_earlier_turns(model: ModelServer) -> None:
    model.queue(Reply.say("Hi Ann."), Reply.say("Ann."))
    play(configuration(model.base_url), "I am Ann", "Who am I?")
    assert model.requests[1].body["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "I am Ann"},
        {"role": "assistant", "content": "Hi Ann."},
        {"role": "user", "content": "Who am I?"},
    ]


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_new_executor_rebuilds_its_context_from_the_history(
    model: ModelServer, protocol: str
) -> None:
    model.queue(Reply.say("Ada."))
    history: list[HistoryEntry] = [
        HistoryUser(content=[InputText(text="my name is Ada")]),
        HistoryFunctionCall(call_id="c1", name="get_weather", arguments='{"city": "Oslo"}'),
        HistoryFunctionOutput(call_id="c1", output="sunny"),
        HistoryAssistant(text="Hello Ada."),
        HistoryFunctionCall(call_id="c2", name="get_weather", arguments="{}"),  # unanswered
    ]
    play(configuration(model.base_url, protocol), "Who am I?", context=Recording(history=history))
    body = model.requests[0].body
    if protocol == "chat_completions":
        # The unanswered call is settled: every call has exactly one result.
        assert [m["role"] for m in body["messages"]] == [
            "system",
            "user",
            "assistant",
            "tool",
            "assistant",
            "tool",
            "user",
        ]
        assert body["messages"][1]["content"] == "my name is Ada"
        assert body["messages"][3] == {"role": "tool", "tool_call_id": "c1", "content": "sunny"}
        assert body["messages"][-1]["content"] == "Who am I?"
    else:
        kinds = [(i.get("type"), i.get("role")) for i in body["input"]]
        assert kinds[0] == ("message", "user") and kinds[-1] == ("message", "user")
        assert ("function_call_output", None) in kinds


def test_a_start_with_history_replaces_the_executor_memory(model: ModelServer) -> None:
    model.queue(Reply.say("Hi Ann."), Reply.say("Hello."))
    context = Recording()

    async def main() -> None:
        run = await executor(configuration(model.base_url))
        try:
            await run.run("run_1", text("I am Ann"), context)
            context.history = []  # a rewind hid the first turn
            await run.run("run_2", text("Who am I?"), context)
        finally:
            await run.close()

    asyncio.run(main())
    assert model.requests[1].body["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Who am I?"},
    ]


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_cancellation_closes_the_model_stream(model: ModelServer, protocol: str) -> None:
    model.queue(Reply.say("a long story that never ends", hang=True))
    context = Recording()

    async def main() -> None:
        run = await executor(configuration(model.base_url, protocol))
        task = asyncio.create_task(run.run("run_1", text("tell me"), context))
        await context.first_delta.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await run.close()

    asyncio.run(main())
    assert context.of("output_message")[-1].status == "in_progress"
    model.release.set()
    assert model.client_left.wait(10)


@pytest.mark.parametrize(
    ("status", "code", "expected"),
    [
        (429, "rate_limit_exceeded", "rate_limit_exceeded"),
        (429, "insufficient_quota", "usage_limit_exceeded"),
        (401, "invalid_api_key", "authentication_error"),
        (400, "context_length_exceeded", "context_length_exceeded"),
        (400, "", "invalid_request"),
        (404, "model_not_found", "resource_not_found"),
        (408, "", "request_timeout"),
        (500, "", "server_error"),
        (503, "", "server_overloaded"),
        (529, "", "server_overloaded"),
    ],
)
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_provider_errors_are_classified_by_status_and_code(
    model: ModelServer, protocol: str, status: int, code: str, expected: str
) -> None:
    model.queue(Reply.fail(status, code))
    with pytest.raises(NativeFailure) as caught:
        play(configuration(model.base_url, protocol), "hi")
    assert caught.value.engine_code == expected
    assert "scripted failure" not in str(caught.value)  # the provider's text is not kept


def test_an_unreachable_server_is_connection_failed() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(NativeFailure) as caught:
        play(configuration(f"http://127.0.0.1:{port}/v1"), "hi")
    assert caught.value.engine_code == "connection_failed"
