"""Workspace tools of the builtin harness: files stay inside the workspace, commands ask
for permission unless the tool policy allows them, every use is observed."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from runtime.confinement import NONE, Confinement, Sandbox
from runtime.harness.builtin import cursor
from tests.runtime.harness.builtin_support import Recording, configuration, executor, text
from tests.support.model_server import ModelServer, Reply


@pytest.fixture
def model() -> Iterator[ModelServer]:
    with ModelServer().running() as server:
        yield server


def play(cfg: object, context: Recording, value: str = "go") -> Recording:
    async def main() -> None:
        run = await executor(cfg)  # type: ignore[arg-type]
        try:
            await run.run("run_1", text(value), context)
        finally:
            await run.close()

    asyncio.run(main())
    return context


def results(model: ModelServer) -> list[str]:
    return [
        m["content"]
        for seen in model.requests
        for m in seen.body["messages"]
        if m["role"] == "tool"
    ]


def test_write_then_read_a_file(model: ModelServer, tmp_path: Path) -> None:
    model.queue(
        Reply.call("write_file", {"path": "/workspace/notes/a.txt", "content": "hello"}),
        Reply.call("read_file", {"path": "notes/a.txt"}),
        Reply.call("list_directory", {"path": "notes"}),
        Reply.say("done"),
    )
    context = play(configuration(model.base_url), Recording(workspace=tmp_path))
    assert (tmp_path / "notes" / "a.txt").read_text() == "hello"
    assert results(model)[-2:] == ["hello", "a.txt"]
    kinds = [(c.stage, c.observation.kind, c.observation.status) for c in context.of("tool_call")]
    assert kinds == [
        ("before", "file_write", "in_progress"),
        ("after", "file_write", "completed"),
        ("before", "file_read", "in_progress"),
        ("after", "file_read", "completed"),
        ("before", "directory_list", "in_progress"),
        ("after", "directory_list", "completed"),
    ]
    offered = {t["function"]["name"] for t in model.requests[0].body["tools"]}
    assert offered == {"read_file", "write_file", "list_directory", "run_command"}


def test_a_path_outside_the_workspace_is_refused(model: ModelServer, tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("secret")
    root = tmp_path / "ws"
    root.mkdir()
    model.queue(Reply.call("read_file", {"path": "../outside.txt"}), Reply.say("no"))
    context = play(configuration(model.base_url), Recording(workspace=root))
    assert results(model)[-1].startswith("error: read_file failed")
    assert context.of("tool_call")[-1].observation.status == "failed"


def test_no_workspace_tools_without_a_workspace(model: ModelServer) -> None:
    model.queue(Reply.say("hi"))
    play(configuration(model.base_url), Recording())
    assert "tools" not in model.requests[0].body


def test_an_approved_command_runs_and_is_observed(model: ModelServer, tmp_path: Path) -> None:
    model.queue(
        Reply.call("run_command", {"command": "echo hi > f.txt; echo ran"}), Reply.say("ok")
    )
    context = play(configuration(model.base_url), Recording(workspace=tmp_path, approve=True))
    assert context.permissions == [("shell", "echo hi > f.txt; echo ran")]
    assert (tmp_path / "f.txt").read_text() == "hi\n"
    before, after = context.of("tool_call")
    assert before.observation.kind == after.observation.kind == "command_execution"
    assert (after.observation.exit_code, after.observation.output) == (0, "ran\n")
    assert results(model)[-1] == "exit code 0\nran\n"


@pytest.mark.parametrize("approve", [True, False])
def test_a_command_awaiting_approval_is_a_checkpoint_a_new_run_continues_from(
    model: ModelServer, tmp_path: Path, approve: bool
) -> None:
    """The wait for a command's approval is an `awaiting_approval` checkpoint naming the
    request. A new Executor resumed from it asks nothing again and calls the model no
    sooner than the decision: it waits for the decision on the same request, runs the
    command once when approved (not at all when denied), and tells the model."""
    model.queue(Reply.call("run_command", {"command": "echo hi >> f.txt"}), Reply.say("ok"))
    first = play(configuration(model.base_url), Recording(workspace=tmp_path, approve=False))
    assert [boundary for boundary, _ in first.checkpoints] == [
        "between_model_calls",
        "awaiting_approval",
        "between_model_calls",
    ]
    waits = cursor.decode(first.checkpoints[1][1])
    assert waits.permission is not None and waits.waiting is None
    model.queue(Reply.say("done"))
    resumed = Recording(workspace=tmp_path, approve=approve, resume_cursor=first.checkpoints[1][1])
    play(configuration(model.base_url), resumed)
    assert resumed.permissions == [] and resumed.waited == [waits.permission]
    assert len(model.requests) == 3
    if approve:
        assert (tmp_path / "f.txt").read_text() == "hi\n"  # once
        assert [f.observation.exit_code for f in resumed.of("tool_call")] == [None, 0]
        assert results(model)[-1] == "exit code 0\n"
    else:
        assert not (tmp_path / "f.txt").exists()
        assert results(model)[-1] == "The user denied running this command."
    sent = json.dumps(model.requests[2].body["messages"])
    assert sent.count("echo hi >> f.txt") == 1  # the call once, from the checkpoint
    assert resumed.of("output_message")[-1].text == "done"


def test_a_denied_command_does_not_run(model: ModelServer, tmp_path: Path) -> None:
    model.queue(Reply.call("run_command", {"command": "touch f.txt"}), Reply.say("ok"))
    context = play(configuration(model.base_url), Recording(workspace=tmp_path, approve=False))
    assert context.permissions == [("shell", "touch f.txt")]
    assert not (tmp_path / "f.txt").exists()
    assert context.of("tool_call") == []
    assert results(model)[-1] == "The user denied running this command."


def test_the_tool_policy_can_allow_commands(model: ModelServer, tmp_path: Path) -> None:
    model.queue(Reply.call("run_command", {"command": "exit 3"}), Reply.say("ok"))
    context = play(
        configuration(model.base_url, command_policy="allow"), Recording(workspace=tmp_path)
    )
    assert context.permissions == []
    after = context.of("tool_call")[-1]
    assert (after.observation.status, after.observation.exit_code) == ("failed", 3)


def test_an_unconfined_command_is_refused_unless_allowed(
    model: ModelServer, tmp_path: Path
) -> None:
    model.queue(Reply.call("run_command", {"command": "echo x > f.txt"}), Reply.say("ok"))
    refusing = Recording(workspace=tmp_path, sandbox=Sandbox(Confinement(NONE)))
    context = play(configuration(model.base_url, command_policy="allow"), refusing)
    assert not (tmp_path / "f.txt").exists()
    told = results(model)[-1]
    assert told.startswith("exit code 126") and "no confinement" in told
    after = context.of("tool_call")[-1]
    assert (after.observation.status, after.observation.exit_code) == ("failed", 126)
