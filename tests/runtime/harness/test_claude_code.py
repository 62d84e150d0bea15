"""The `claude_code` harness driving the real Claude Code CLI against a loopback
Anthropic Messages server: streamed text, a file written after an approval, a steer, a
cancel, a resume in a new Runtime, and engine failures classified by status."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from runtime.harness.base import NativeFailure
from runtime.harness.claude_code.adapter import ClaudeCodeHarness
from runtime.harness.claude_code.executor import ClaudeCodeExecutor
from runtime.proto.execution import ExecutionConfiguration
from tests.runtime.harness.builtin_support import Recording, text
from tests.runtime.harness.claude_code_support import claude_command, configuration
from tests.support.anthropic_server import AnthropicServer, Turn


@pytest.fixture(scope="module")
def command() -> str:
    return claude_command()


@pytest.fixture
def model() -> Iterator[AnthropicServer]:
    with AnthropicServer().running() as server:
        yield server


def harness(command: str, home: Path) -> ClaudeCodeHarness:
    return ClaudeCodeHarness(command=command, config_dir=home / "claude-config")


async def create(command: str, home: Path, cfg: ExecutionConfiguration) -> ClaudeCodeExecutor:
    return await harness(command, home).create_executor("exec_1", cfg)


def test_a_known_cli_is_available_with_its_version(command: str, tmp_path: Path) -> None:
    adapter = harness(command, tmp_path)
    assert adapter.available()
    assert adapter.version.startswith("2.1.")


def test_a_missing_cli_is_unavailable(tmp_path: Path) -> None:
    adapter = ClaudeCodeHarness(command=str(tmp_path / "no-claude"))
    assert not adapter.available()
    assert adapter.version == ""


def test_a_turn_streams_text_and_reports_usage(
    command: str, model: AnthropicServer, tmp_path: Path
) -> None:
    model.queue(Turn.say("Hello from the model."))
    context = Recording(workspace=tmp_path / "ws")
    context.workspace.mkdir()  # type: ignore[union-attr]

    async def main() -> None:
        run = await create(command, tmp_path, configuration(model.base_url, context.workspace))
        try:
            await run.run("run_1", text("say hello"), context)
        finally:
            await run.close()

    asyncio.run(main())
    deltas = "".join(d.delta for d in context.of("delta"))
    assert deltas == "Hello from the model."
    done = [m for m in context.of("output_message") if m.status == "completed"]
    assert [(m.text, m.phase) for m in done] == [("Hello from the model.", "final_answer")]
    [usage] = context.of("usage")
    assert usage.tokens.input_tokens == 12 and usage.tokens.output_tokens == 7
    assert model.requests[0]["model"] == "test-model"
    offered = {tool["name"] for tool in model.requests[0]["tools"]}
    assert {"Bash", "Write", "Read"} <= offered
    # Subagents and web search are disabled; questions to the user are not forwarded.
    assert not offered & {"Agent", "Task", "WebSearch", "WebFetch", "AskUserQuestion"}


def test_a_file_is_written_after_approval(
    command: str, model: AnthropicServer, tmp_path: Path
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    target = workspace / "notes.txt"
    model.queue(
        Turn.use("Write", {"file_path": str(target), "content": "approved"}, text="Writing."),
        Turn.say("Done."),
    )
    context = Recording(workspace=workspace, approve=True)

    async def main() -> None:
        run = await create(command, tmp_path, configuration(model.base_url, workspace))
        try:
            await run.run("run_1", text("write notes.txt"), context)
        finally:
            await run.close()

    asyncio.run(main())
    assert target.read_text() == "approved"
    assert context.permissions == [("Write", f"Write {target}")]
    calls = [(c.stage, c.observation.kind, c.observation.status) for c in context.of("tool_call")]
    assert calls == [("before", "file_write", "in_progress"), ("after", "file_write", "completed")]
    phases = [m.phase for m in context.of("output_message") if m.status == "completed"]
    assert phases == ["commentary", "final_answer"]


def test_a_denied_write_leaves_no_file(
    command: str, model: AnthropicServer, tmp_path: Path
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    target = workspace / "notes.txt"
    model.queue(Turn.use("Write", {"file_path": str(target), "content": "no"}), Turn.say("Ok."))
    context = Recording(workspace=workspace, approve=False)

    async def main() -> None:
        run = await create(command, tmp_path, configuration(model.base_url, workspace))
        try:
            await run.run("run_1", text("write notes.txt"), context)
        finally:
            await run.close()

    asyncio.run(main())
    assert not target.exists()
    assert [c.observation.status for c in context.of("tool_call")] == ["in_progress", "failed"]


def test_a_read_outside_the_workspace_asks_first(
    command: str, model: AnthropicServer, tmp_path: Path
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    outside = tmp_path / "secret.txt"
    outside.write_text("not for the model")
    model.queue(Turn.use("Read", {"file_path": str(outside)}), Turn.say("Ok."))
    context = Recording(workspace=workspace, approve=False)

    async def main() -> None:
        run = await create(command, tmp_path, configuration(model.base_url, workspace))
        try:
            await run.run("run_1", text("read it"), context)
        finally:
            await run.close()

    asyncio.run(main())
    assert context.permissions == [("Read", f"Read {outside}")]
    assert "not for the model" not in str(model.requests[-1]["messages"])


def test_a_steer_reaches_the_model_in_the_same_turn(
    command: str, model: AnthropicServer, tmp_path: Path
) -> None:
    model.queue(Turn.say("Working on it.", hang=True), Turn.say("Steered answer."))
    context = Recording()

    async def main() -> None:
        run = await create(command, tmp_path, configuration(model.base_url))
        try:
            task = asyncio.create_task(run.run("run_1", text("start"), context))
            await context.first_delta.wait()
            context.steered.append(text("also mention the steer"))
            model.release.set()
            await task
        finally:
            await run.close()

    asyncio.run(main())
    assert context.steered == []
    last = model.requests[-1]["messages"]
    assert "also mention the steer" in str(last[-1])
    finals = [m.text for m in context.of("output_message") if m.status == "completed"]
    assert finals[-1] == "Steered answer."


def test_a_steer_during_tool_use_joins_the_turn(
    command: str, model: AnthropicServer, tmp_path: Path
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    target = workspace / "a.txt"
    model.queue(
        Turn.use("Write", {"file_path": str(target), "content": "x"}, "Writing.", hang=True),
        Turn.say("Wrote it."),
        Turn.say("Steered answer."),
    )
    context = Recording(workspace=workspace, approve=True)

    async def main() -> None:
        run = await create(command, tmp_path, configuration(model.base_url, workspace))
        try:
            task = asyncio.create_task(run.run("run_1", text("write a.txt"), context))
            await context.first_delta.wait()
            context.steered.append(text("also mention the steer"))
            model.release.set()
            async with asyncio.timeout(60):
                await task
        finally:
            await run.close()

    asyncio.run(main())
    assert target.read_text() == "x"
    # Written before the write was approved, the steer joins the next model call.
    assert len(model.requests) == 2
    assert "also mention the steer" in str(model.requests[1]["messages"])
    finals = [m.text for m in context.of("output_message") if m.status == "completed"]
    assert finals == ["Writing.", "Wrote it."]


def test_a_cancelled_turn_stops_the_cli_and_the_next_turn_resumes(
    command: str, model: AnthropicServer, tmp_path: Path
) -> None:
    model.queue(Turn.say("Never finished.", hang=True), Turn.say("Second turn."))
    first, second = Recording(), Recording()

    async def main() -> None:
        run = await create(command, tmp_path, configuration(model.base_url))
        try:
            task = asyncio.create_task(run.run("run_1", text("first"), first))
            await first.first_delta.wait()
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            await run.run("run_2", text("second"), second)
        finally:
            await run.close()

    asyncio.run(main())
    assert [m.text for m in second.of("output_message") if m.status == "completed"] == [
        "Second turn."
    ]
    assert "first" in str(model.requests[-1]["messages"])


def test_a_new_runtime_resumes_the_native_session(
    command: str, model: AnthropicServer, tmp_path: Path
) -> None:
    model.queue(Turn.say("Remember the word apricot."), Turn.say("It was apricot."))

    async def main() -> None:
        run = await create(command, tmp_path, configuration(model.base_url))
        try:
            await run.run("run_1", text("remember apricot"), Recording())
        finally:
            await run.close()
        session_id = run.native_session_id
        # A new adapter and Executor, as a restarted Runtime builds them.
        resumed = await create(
            command, tmp_path, configuration(model.base_url, agent_session_id=session_id)
        )
        try:
            await resumed.run("run_1", text("which word?"), Recording())
        finally:
            await resumed.close()

    asyncio.run(main())
    history = str(model.requests[-1]["messages"])
    assert "remember apricot" in history and "Remember the word apricot." in history


@pytest.mark.parametrize(
    ("status", "error_type", "code"),
    [
        (429, "rate_limit_error", "rate_limit_exceeded"),
        (401, "authentication_error", "authentication_error"),
        (400, "invalid_request_error", "invalid_request"),
    ],
)
def test_engine_failures_are_classified_by_status(
    command: str, model: AnthropicServer, tmp_path: Path, status: int, error_type: str, code: str
) -> None:
    model.queue(Turn.fail(status, error_type))

    async def main() -> None:
        run = await create(command, tmp_path, configuration(model.base_url))
        try:
            await run.run("run_1", text("hello"), Recording())
        finally:
            await run.close()

    with pytest.raises(NativeFailure) as failure:
        asyncio.run(main())
    assert failure.value.engine_code == code
    assert len(model.requests) == 1
