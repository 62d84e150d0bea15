"""Frame order of the scripted harness through a real Run: usage comes before a `/fail`
error, so the error is the last frame before `done`."""

from __future__ import annotations

import asyncio

import msgspec

from runtime.harness.scripted import ScriptedHarness
from runtime.proto import run as wire
from runtime.proto.execution import AgentOptions, ExecutionConfiguration, ExecutionControls
from runtime.runs import Run
from tests.runtime.harness.builtin_support import text


def frames(script: str) -> list[tuple[str, msgspec.Struct | None]]:
    sent: list[tuple[str, msgspec.Struct | None]] = []

    async def send(type_: str, run_id: str, payload: msgspec.Struct | None) -> None:
        sent.append((type_, payload))

    async def main() -> None:
        harness = ScriptedHarness()
        cfg = ExecutionConfiguration(
            agent_kind="scripted",
            agent_options=AgentOptions(model="scripted"),
            execution_controls=ExecutionControls(
                web_search="disabled",
                text_verbosity="medium",
                disable_programmatic_tool_calling=True,
            ),
            disable_execution_environment=True,
        )
        run = Run("run_1", await harness.create_executor("e", cfg), harness.declaration, send)
        run.start(text(script))
        assert run.task is not None
        await run.task

    asyncio.run(main())
    return sent


def test_fail_sends_usage_then_error_then_done() -> None:
    sent = frames("/say partial\n/fail connection_failed 503")
    types = [type_ for type_, _ in sent]
    assert types[-3:] == ["usage", "error", "done"]
    error = sent[-2][1]
    assert isinstance(error, wire.Error)
    assert (error.code, error.http_status) == ("connection_failed", 503)


def test_without_failure_usage_is_the_last_frame_before_done() -> None:
    types = [type_ for type_, _ in frames("hello there")]
    assert types == ["checkpoint", "output_message", "delta", "output_message", "usage", "done"]


def _final_text(sent: list[tuple[str, msgspec.Struct | None]]) -> str:
    return "".join(p.delta for t, p in sent if t == "delta" and isinstance(p, wire.Delta))


def test_ack_names_the_last_quoted_block_and_nothing_else() -> None:
    script = "\n".join(
        [
            "Owner instruction: keep this private.",
            "> peer: an earlier message",
            "[new messages]",
            "> first line of the new one",
            "> /say second line",
            "[end]",
            "/ack",
        ]
    )
    reply = _final_text(frames(script))
    assert reply == 'Received: "first line of the new one /say second line" (42 characters).'


def test_ack_shortens_long_text_and_does_not_acknowledge_an_acknowledgement() -> None:
    long = _final_text(frames("> " + "x" * 100 + "\n/ack"))
    assert long == 'Received: "' + "x" * 60 + '..." (100 characters).'
    assert _final_text(frames('> Received: "hi" (2 characters).\n/ack')) == ""
    assert _final_text(frames("no quoted lines\n/ack")) == ""
