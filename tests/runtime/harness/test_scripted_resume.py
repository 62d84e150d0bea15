"""Checkpoints, pause and resume of the scripted harness through real Runs: a Run
started from a checkpoint's cursor continues there, never repeating a directive that
ran before it and never sending again the request it was waiting for."""

from __future__ import annotations

import asyncio

import msgspec

from runtime.harness.scripted import ScriptedHarness
from runtime.proto import run as wire
from runtime.proto.execution import (
    AgentOptions,
    ExecutionConfiguration,
    ExecutionControls,
    FunctionTool,
)
from runtime.proto.functions import FunctionCall, FunctionResult
from runtime.proto.inputs import InputText
from runtime.runs import Run
from tests.runtime.harness.builtin_support import text

CONFIGURATION = ExecutionConfiguration(
    agent_kind="scripted",
    agent_options=AgentOptions(model="scripted"),
    execution_controls=ExecutionControls(
        web_search="disabled", text_verbosity="medium", disable_programmatic_tool_calling=True
    ),
    disable_execution_environment=True,
    function_tools=[FunctionTool(name="lookup")],
)


class Recorder:
    """A Run's `send`: keeps every frame and wakes waiters on checkpoints."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, msgspec.Struct]] = []
        self.checkpointed = asyncio.Event()

    async def send(self, type_: str, run_id: str, payload: msgspec.Struct) -> None:
        self.sent.append((type_, payload))
        if type_ == "checkpoint":
            self.checkpointed.set()

    def checkpoints(self) -> list[wire.Checkpoint]:
        return [p for t, p in self.sent if isinstance(p, wire.Checkpoint)]

    def said(self) -> list[str]:
        return [
            p.text or ""
            for _, p in self.sent
            if isinstance(p, wire.OutputMessage) and p.status == "completed"
        ]


async def _run(recorder: Recorder, script: str, resume: str = "") -> Run:
    harness = ScriptedHarness()
    executor = await harness.create_executor("e", CONFIGURATION)
    run = Run("run_1", executor, harness.declaration, recorder.send)
    run.start(text(script), resume)
    return run


def test_a_run_resumed_from_a_wait_continues_without_sending_the_call_again() -> None:
    async def main() -> None:
        first = Recorder()
        run = await _run(first, '/say before\n/call lookup {"q": 1}\n/say got {result}')
        while not any(c.boundary == "awaiting_function_result" for c in first.checkpoints()):
            first.checkpointed.clear()
            await first.checkpointed.wait()
        call = next(p for _, p in first.sent if isinstance(p, FunctionCall))
        assert run.task is not None
        run.task.cancel()  # the process dies: the Run is gone
        await asyncio.wait({run.task})

        second = Recorder()
        resumed = await _run(second, "ignored", first.checkpoints()[-1].cursor)
        await asyncio.sleep(0)  # one loop turn: the resumed Run registers its wait, no timing
        result = FunctionResult(
            delivery_id="d1", call_id=call.call_id, success=True, content=[InputText(text="42")]
        )
        ack, apply = resumed.function_result(result)
        assert ack.applied
        apply()
        assert resumed.task is not None
        await resumed.task
        assert second.said() == ["got 42"]
        assert not any(isinstance(p, FunctionCall) for _, p in second.sent)
        assert second.sent[-1][0] == "done"

    asyncio.run(main())


def test_a_pause_stops_at_the_checkpoint_and_a_resume_runs_only_what_was_left() -> None:
    async def main() -> None:
        first = Recorder()
        run = await _run(first, "/say a\n/sleep 60000\n/say b\n/say c")
        while first.said() != ["a"] or len(first.checkpoints()) < 2:
            first.checkpointed.clear()
            await first.checkpointed.wait()
        run.request_pause()  # waiting in the sleep, right after a checkpoint
        assert run.task is not None
        await run.task
        done = first.sent[-1][1]
        assert isinstance(done, wire.Done) and done.metadata == {"paused": "true"}

        second = Recorder()
        cursor = first.checkpoints()[-1].cursor
        resumed = await _run(second, "ignored", cursor.replace("60000", "0"))
        assert resumed.task is not None
        await resumed.task
        assert first.said() + second.said() == ["a", "b", "c"]

    asyncio.run(main())


def test_a_pause_during_a_step_waits_for_the_next_checkpoint() -> None:
    async def main() -> None:
        recorder = Recorder()
        run = await _run(recorder, "/stream 40\n/say after")
        run.request_pause()  # before the first checkpoint: honoured there
        assert run.task is not None
        await run.task
        assert [t for t, _ in recorder.sent] == ["checkpoint", "done"]

    asyncio.run(main())


async def _waiting_cursor() -> str:
    """The cursor of a Run's checkpoint while it waits for a function's result."""
    first = Recorder()
    run = await _run(first, '/call lookup {"q": 1}\n/say got {result}')
    while not any(c.boundary == "awaiting_function_result" for c in first.checkpoints()):
        first.checkpointed.clear()
        await first.checkpointed.wait()
    assert run.task is not None
    run.task.cancel()  # the process dies: the Run is gone
    await asyncio.wait({run.task})
    return first.checkpoints()[-1].cursor


def test_a_run_resumed_into_a_wait_stops_there_when_paused() -> None:
    # Resumed at a wait, the Run sends nothing until the answer comes: it is still at
    # the checkpoint it continues from, and a pause (a drain's, or a user's) stops it
    # there, whether it came while the Run waited or before its task first ran.
    async def main() -> None:
        cursor = await _waiting_cursor()
        for early in (False, True):
            recorder = Recorder()
            resumed = await _run(recorder, "ignored", cursor)
            if early:
                resumed.request_pause()
            await asyncio.sleep(0)  # one loop turn: the resumed Run registers its wait
            if not early:
                resumed.request_pause()
            assert resumed.task is not None
            # A Run the pause missed would wait for its answer for good: a bound on that
            # wait makes it a failure instead of a hang (not a measure of speed).
            await asyncio.wait_for(resumed.task, 30)
            assert [t for t, _ in recorder.sent] == ["done"], early
            done = recorder.sent[-1][1]
            assert isinstance(done, wire.Done) and done.metadata == {"paused": "true"}

    asyncio.run(main())
