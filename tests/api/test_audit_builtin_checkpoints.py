"""The `builtin` harness checkpoints before each model call and while it waits for a
function result (seed 003): a pause asked while its turn waits applies there at once,
survives kill -9 as paused, takes the result sent meanwhile, and a resume on a new
Executor continues with the whole conversation (the session's earlier turns from Core's
items, the turn's own tool call and result from its checkpoint) without calling any
tool again; a turn in `requires_action` (a function result, or a command's approval)
survives kill -9 and completes when its answer arrives afterwards."""

from __future__ import annotations

import json
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from openai import OpenAI

from tests.api.support import Surface, surface
from tests.api.test_builtin import create, message
from tests.api.test_continuity import client_of
from tests.api.test_reclaim import LOOKUP
from tests.api.test_run_control import command, run_state, settled, wait_idle
from tests.conftest import start_server
from tests.support.model_server import ModelServer, Reply

__all__ = ["surface"]


@pytest.fixture
def model() -> Iterator[ModelServer]:
    with ModelServer().running() as server:
        yield server


def first_required_action(client: OpenAI, session_id: str, text: str) -> Any:
    """Send `text` and follow the stream until the turn asks for something (a function
    result, an approval): the first required action."""
    with client.beta.agents.sessions.events.stream(session_id) as live:
        client.beta.agents.sessions.events.create(session_id, events=[message(text)])  # type: ignore[list-item]
        for event in live:
            if event.type == "agent.session.requires_action":
                return event.session.required_actions[0]  # type: ignore[attr-defined]
    raise AssertionError("the stream ended before the turn asked for anything")


def requires_action(client: OpenAI, session_id: str, text: str) -> tuple[str, str]:
    """Send `text` until the turn asks for a function result: (turn_id, call_id)."""
    action = first_required_action(client, session_id, text)
    return action.turn_id, action.call_id


def tool_result(client: OpenAI, session_id: str, turn_id: str, call_id: str) -> None:
    client.beta.agents.sessions.events.create(
        session_id,
        events=[
            {
                "type": "agent.session.input.tool_result",
                "turn_id": turn_id,
                "call_id": call_id,
                "success": True,
                "output": "forty-two",
            }  # type: ignore[list-item]
        ],
    )


def said(request: dict[str, Any]) -> str:
    return json.dumps(request["messages"])


def test_a_builtin_turn_pauses_before_its_next_model_call_and_resumes_after_kill_9(
    tmp_path: Path, model: ModelServer
) -> None:
    data = tmp_path / "data"
    server = start_server(data)
    model.queue(Reply.say("Hello Ada"), Reply.call("lookup", {}))
    try:
        with client_of(server) as client:
            session_id, _ = create(client, model, "my name is Ada", agent={"tools": [LOOKUP]})
            turn_id, call_id = requires_action(client, session_id, "look it up")
            reply = command(server, session_id, "pause")
            assert settled(server, reply.json()["id"])["status"] == "applied"
            paused = run_state(client, session_id)
            assert paused["phase"] == "paused"
            assert paused["checkpoint"]["boundary"] == "awaiting_function_result"
            tool_result(client, session_id, turn_id, call_id)  # kept while paused
            assert len(model.requests) == 2  # the next model call was not made
    finally:
        server.process.send_signal(signal.SIGKILL)
        server.process.wait(timeout=10)

    restarted = start_server(data, port=server.port)
    model.queue(Reply.say("It is forty-two"))
    try:
        with client_of(restarted) as client:
            assert run_state(client, session_id)["phase"] == "paused"
            resume = command(
                restarted,
                session_id,
                "resume",
                expected_state_version=run_state(client, session_id)["state_version"],
            )
            assert settled(restarted, resume.json()["id"])["status"] == "applied"
            wait_idle(client, session_id)
            final = run_state(client, session_id)
            assert final["status"] == "completed"
            assert final["worker_epoch"] > paused["worker_epoch"]
            assert len(model.requests) == 3
            last = said(model.requests[2].body)
            assert "my name is Ada" in last and "Hello Ada" in last  # the earlier turn
            assert "look it up" in last and "forty-two" in last  # the turn's own
            assert last.count("lookup") == 1  # one call, not repeated
            items = client.beta.agents.sessions.items.list(session_id, order="asc").data
            assert [i.type for i in items] == [
                "message",
                "message",
                "message",
                "function_call",
                "function_call_output",
                "message",
            ]
            assert final["manifest"]["request_ids"] is not None
    finally:
        restarted.stop()


def test_a_builtin_turn_resumed_on_the_same_executor_repeats_nothing(
    client: OpenAI, surface: Surface, model: ModelServer
) -> None:
    server = surface.server
    model.queue(Reply.say("Hello Ada"), Reply.call("lookup", {}))
    session_id, _ = create(client, model, "my name is Ada", agent={"tools": [LOOKUP]})
    turn_id, call_id = requires_action(client, session_id, "look it up")
    reply = command(server, session_id, "pause")
    assert settled(server, reply.json()["id"])["status"] == "applied"
    tool_result(client, session_id, turn_id, call_id)
    model.queue(Reply.say("It is forty-two"))
    resume = command(server, session_id, "resume")
    assert settled(server, resume.json()["id"])["status"] == "applied"
    wait_idle(client, session_id)
    assert run_state(client, session_id)["status"] == "completed"
    last = said(model.requests[-1].body)
    assert [last.count(text) for text in ("my name is Ada", "look it up", "forty-two")] == [
        1,
        1,
        1,
    ]


def test_a_builtin_turn_in_requires_action_survives_kill_9(
    tmp_path: Path, model: ModelServer
) -> None:
    data = tmp_path / "data"
    server = start_server(data)
    model.queue(Reply.say("Hello Ada"), Reply.call("lookup", {}))
    try:
        with client_of(server) as client:
            session_id, _ = create(client, model, "my name is Ada", agent={"tools": [LOOKUP]})
            turn_id, call_id = requires_action(client, session_id, "look it up")
            before = run_state(client, session_id)
            assert before["checkpoint"]["boundary"] == "awaiting_function_result"
    finally:
        server.process.send_signal(signal.SIGKILL)
        server.process.wait(timeout=10)

    restarted = start_server(data, port=server.port)
    model.queue(Reply.say("It is forty-two"))
    try:
        with client_of(restarted) as client:
            assert client.beta.agents.sessions.retrieve(session_id).status == "requires_action"
            tool_result(client, session_id, turn_id, call_id)
            wait_idle(client, session_id)
            after = run_state(client, session_id)
            assert after["status"] == "completed"
            assert after["worker_epoch"] > before["worker_epoch"]
            last = said(model.requests[2].body)
            assert "my name is Ada" in last and "forty-two" in last
            items = client.beta.agents.sessions.items.list(session_id, order="asc").data
            assert [i.type for i in items] == [
                "message",
                "message",
                "message",
                "function_call",
                "function_call_output",
                "message",
            ]
    finally:
        restarted.stop()


def test_a_builtin_turn_awaiting_a_command_approval_survives_kill_9(
    tmp_path: Path, model: ModelServer
) -> None:
    """The wait for a command's approval is a checkpoint: after kill -9 the session still
    asks for the same approval, and approving it runs the command once and completes
    the turn without calling the model again for the call."""
    data, workspace = tmp_path / "data", tmp_path / "ws"
    workspace.mkdir()
    server = start_server(data)
    model.queue(Reply.say("Ready."))
    environment = {"type": "self_hosted", "workspace_directory": str(workspace)}
    try:
        with client_of(server) as client:
            session_id, _ = create(client, model, "hello", environment=environment)
            model.queue(Reply.call("run_command", {"command": "echo made >> made.txt"}))
            action = first_required_action(client, session_id, "make a file")
            assert action.type == "mcp_approval_request"
            before = run_state(client, session_id)
            assert before["checkpoint"]["boundary"] == "awaiting_approval"
            assert len(model.requests) == 2
    finally:
        server.process.send_signal(signal.SIGKILL)
        server.process.wait(timeout=10)

    restarted = start_server(data, port=server.port)
    model.queue(Reply.say("Done."))
    try:
        with client_of(restarted) as client:
            session = client.beta.agents.sessions.retrieve(session_id)
            assert session.status == "requires_action"
            assert session.required_actions[0].request_id == action.request_id  # type: ignore[union-attr,index]
            client.beta.agents.sessions.events.create(
                session_id,
                events=[
                    {
                        "type": "agent.session.input.mcp_approval_request_result",
                        "request_id": action.request_id,
                        "response": {"type": "mcp_tool_call", "decision": "approve"},
                    }  # type: ignore[list-item]
                ],
            )
            wait_idle(client, session_id)
            after = run_state(client, session_id)
            assert after["status"] == "completed"
            assert after["worker_epoch"] > before["worker_epoch"]
            assert (workspace / "made.txt").read_text() == "made\n"  # run once
            assert len(model.requests) == 3
            last = said(model.requests[2].body)
            assert last.count("echo made >> made.txt") == 1 and "exit code 0" in last
    finally:
        restarted.stop()
