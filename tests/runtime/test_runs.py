"""A Run checks optional operations against the declaration frozen at admission before
any native call, and keeps unsupported, contract violations, unavailability, native
failures and unknown outcomes apart in its `error` frame."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import msgspec
import pytest

from runtime.harness.base import (
    ContractViolation,
    HarnessError,
    NativeFailure,
    OutcomeUnknown,
    RunContext,
    Unavailable,
    Unsupported,
)
from runtime.proto import codec, limits
from runtime.proto import run as wire
from runtime.proto.capabilities import CAPABILITY_FIELDS, AgentKindCapabilities
from runtime.proto.errors import DecisionErrorCode, SteerErrorCode
from runtime.proto.functions import FunctionResult
from runtime.proto.inputs import InputText, Message
from runtime.proto.interactions import PermissionDecision, PermissionRequest
from runtime.proto.steering import PromptSteer
from runtime.runs import Run

Sent = list[tuple[str, msgspec.Struct | None]]
ALL = dict.fromkeys(CAPABILITY_FIELDS, True)


def declaration(**overrides: bool) -> AgentKindCapabilities:
    return AgentKindCapabilities(**{**ALL, **overrides})


class Scripted:
    """An Executor whose turn is a coroutine function given by the test."""

    executor_id = "exec"

    def __init__(self, body: Callable[[RunContext], Awaitable[None]]) -> None:
        self._body = body

    async def run(self, run_id: str, messages: Any, context: RunContext) -> None:
        await self._body(context)

    async def close(self) -> None:
        return None


def play(
    body: Callable[[RunContext], Awaitable[None]],
    declared: AgentKindCapabilities,
    during: Callable[[Run], Awaitable[None]] | None = None,
) -> Sent:
    sent: Sent = []

    async def send(type_: str, run_id: str, payload: msgspec.Struct | None) -> None:
        sent.append((type_, payload))

    async def main() -> None:
        run = Run("run_1", Scripted(body), declared, send)
        run.start([Message(content=[InputText(text="hi")])])
        if during is not None:
            await during(run)
        assert run.task is not None
        await run.task

    asyncio.run(main())
    return sent


def error_of(sent: Sent) -> wire.Error:
    errors = [payload for type_, payload in sent if type_ == "error"]
    assert len(errors) == 1, sent
    assert sent[-1][0] == "done"
    error = errors[0]
    assert isinstance(error, wire.Error)
    return error


def test_an_undeclared_function_call_is_refused_before_anything_is_emitted() -> None:
    async def body(context: RunContext) -> None:
        await context.call_function("c1", "f", "{}")

    sent = play(body, declaration(function_tools=False, function_result_images=False))
    assert [type_ for type_, _ in sent] == ["error", "done"]
    error = error_of(sent)
    assert error.error.startswith("unsupported operation: function_tools")
    assert error.code == "" and error.http_status == 0


def test_an_undeclared_permission_request_is_refused_before_anything_is_emitted() -> None:
    async def body(context: RunContext) -> None:
        await context.request_permission("p1", "shell", "run it")

    sent = play(body, declaration(permissions=False))
    assert [type_ for type_, _ in sent] == ["error", "done"]
    assert "permissions" in error_of(sent).error


@pytest.mark.parametrize("operation", ["function_tools", "steering", "permissions"])
def test_a_declared_operation_answering_unsupported_is_a_contract_violation(
    operation: str,
) -> None:
    async def body(context: RunContext) -> None:
        raise Unsupported(operation)

    error = error_of(play(body, declaration()))
    assert error.error.startswith("harness contract violation:")
    assert operation in error.error
    assert error.code == "" and error.http_status == 0  # never an engine failure


@pytest.mark.parametrize(
    ("failure", "prefix"),
    [
        (ContractViolation("bad reply"), "harness contract violation:"),
        (Unavailable("no model"), "harness unavailable:"),
        (OutcomeUnknown("write sent, no receipt"), "outcome unknown:"),
        (HarnessError("other"), "harness failure (harness_error):"),
    ],
)
def test_each_kind_of_adapter_failure_has_its_own_text_and_no_engine_code(
    failure: HarnessError, prefix: str
) -> None:
    async def body(context: RunContext) -> None:
        raise failure

    error = error_of(play(body, declaration()))
    assert error.error.startswith(prefix)
    assert error.code == ""


def test_a_native_failure_keeps_its_engine_code() -> None:
    async def body(context: RunContext) -> None:
        raise NativeFailure("model said no", "rate_limit_exceeded", 429)

    error = error_of(play(body, declaration()))
    assert error.error == "native failure: model said no"
    assert (error.code, error.http_status) == ("rate_limit_exceeded", 0)


def test_only_connection_failed_keeps_an_http_status_and_unknown_codes_are_dropped() -> None:
    async def connection(context: RunContext) -> None:
        raise NativeFailure("no route", "connection_failed", 502)

    async def unknown(context: RunContext) -> None:
        raise NativeFailure("odd", "teapot", 418)

    error = error_of(play(connection, declaration()))
    assert (error.code, error.http_status) == ("connection_failed", 502)
    error = error_of(play(unknown, declaration()))
    assert (error.code, error.http_status) == ("", 0)


def test_results_and_decisions_for_undeclared_operations_are_refused_unsupported() -> None:
    async def body(context: RunContext) -> None:
        await asyncio.Event().wait()

    acks: list[str] = []

    async def during(run: Run) -> None:
        ack, _apply = run.function_result(
            FunctionResult(delivery_id="d1", call_id="c1", success=True, content=[])
        )
        acks.append(ack.error_code)
        decision = run.decision("p1", PermissionDecision(delivery_id="d2", approved=True))
        acks.append(decision.error_code)
        await run.cancel(5.0)

    sent = play(
        body,
        declaration(permissions=False, function_tools=False, function_result_images=False),
        during,
    )
    assert acks == [DecisionErrorCode.UNSUPPORTED, DecisionErrorCode.UNSUPPORTED]
    assert sent[-1][0] == "done"


def test_steering_is_refused_unsupported_when_not_declared() -> None:
    async def body(context: RunContext) -> None:
        await asyncio.Event().wait()

    async def during(run: Run) -> None:
        await run.steer(
            PromptSteer(input_id="in_1", input=[Message(content=[InputText(text="more")])])
        )
        await run.cancel(5.0)

    sent = play(body, declaration(steering=False), during)
    acks = [payload for type_, payload in sent if type_ == "prompt_steer_ack"]
    assert [getattr(ack, "error_code", None) for ack in acks] == [SteerErrorCode.UNSUPPORTED]


def test_applied_decisions_are_remembered_up_to_the_cache_limit() -> None:
    count = limits.APPLIED_DECISION_CACHE_ENTRIES + 1

    async def body(context: RunContext) -> None:
        for n in range(count):
            assert await context.request_permission(f"p{n}", "shell", "run it")

    async def main() -> None:
        requests: asyncio.Queue[str] = asyncio.Queue()

        async def send(type_: str, run_id: str, payload: msgspec.Struct | None) -> None:
            if isinstance(payload, PermissionRequest):
                requests.put_nowait(payload.request_id)

        run = Run("run_1", Scripted(body), declaration(), send)
        run.start([Message(content=[InputText(text="hi")])])
        for n in range(count):
            request_id = await asyncio.wait_for(requests.get(), 5)
            ack = run.decision(request_id, PermissionDecision(delivery_id=f"d{n}", approved=True))
            assert ack.applied, ack
        assert run.task is not None
        await run.task
        oldest = run.decision("p0", PermissionDecision(delivery_id="again", approved=True))
        assert (oldest.applied, oldest.error_code) == (False, DecisionErrorCode.NOT_PENDING)
        last = f"p{count - 1}"
        replay = run.decision(last, PermissionDecision(delivery_id="again", approved=True))
        assert (replay.applied, replay.error_code) == (True, "")

    asyncio.run(main())


def test_an_adapter_can_wait_for_steered_input_while_its_turn_runs() -> None:
    taken: list[list[str]] = []

    async def body(context: RunContext) -> None:
        await context.wait_steered()  # returns only once an input is written
        for messages in context.take_steered():
            taken.append([p.text for m in messages for p in m.content])  # type: ignore[union-attr]

    async def during(run: Run) -> None:
        await run.steer(
            PromptSteer(input_id="in_1", input=[Message(content=[InputText(text="more")])])
        )

    sent = play(body, declaration(), during)
    assert taken == [["more"]]
    acks = [payload for type_, payload in sent if type_ == "prompt_steer_ack"]
    assert [(ack.written, ack.accepted) for ack in acks] == [(True, False), (False, True)]  # type: ignore[attr-defined]


def test_an_output_frame_past_the_frame_limit_fails_its_run_alone() -> None:
    """Core closes the connection on a frame past the wire's limit, failing every Run on
    it; the Runtime sends it through `codec.encode_to_send`, which refuses it, and only
    this Run ends, with an `error` naming the frame, then its `done`."""
    sent: Sent = []

    async def send(type_: str, run_id: str, payload: msgspec.Struct | None) -> None:
        assert payload is not None
        codec.encode_to_send(payload, run_id)  # what the transport sends, or raises
        sent.append((type_, payload))

    async def body(context: RunContext) -> None:
        await context.emit("output_message", wire.OutputMessage(id="m1", status="in_progress"))
        text = "x" * limits.MAX_FRAME_BYTES
        await context.emit("output_message", wire.OutputMessage("m1", "completed", text=text))
        await context.emit("output_message", wire.OutputMessage(id="m2", status="completed"))

    async def main() -> None:
        run = Run("run_1", Scripted(body), declaration(), send)
        run.start([Message(content=[InputText(text="hi")])])
        assert run.task is not None
        await run.task

    asyncio.run(main())
    assert [type_ for type_, _ in sent] == ["output_message", "error", "done"]
    error = error_of(sent)
    assert error.error.startswith("harness failure (output_too_large): the output_message frame")
    assert f"exceeds the {limits.MAX_FRAME_BYTES}-byte frame limit" in error.error
