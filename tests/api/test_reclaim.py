"""Runs that survive restarts (seed 003): a turn whose latest checkpoint has nothing in
flight is re-claimed with a new worker epoch and continues after kill -9; only a turn
with an operation in flight fails, naming it. Nothing is replayed."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from openai import OpenAI

from tests.conftest import API_KEY, Server, start_server

LOOKUP = {
    "type": "function",
    "name": "lookup",
    "description": "Look a value up.",
    "parameters": {"type": "object", "properties": {}, "additionalProperties": True},
}


@contextmanager
def sdk(server: Server) -> Iterator[OpenAI]:
    with OpenAI(
        base_url=f"{server.base_url}/v1",
        api_key=API_KEY,
        max_retries=0,
        _strict_response_validation=True,
    ) as client:
        yield client


def kill(server: Server) -> None:
    server.process.send_signal(signal.SIGKILL)
    server.process.wait(timeout=10)


def x(turn: Any) -> dict[str, Any]:
    return dict(turn.x_corebox)


def test_a_turn_waiting_for_a_function_result_survives_kill_9(tmp_path: Path) -> None:
    data = tmp_path / "data"
    server = start_server(data)
    try:
        with sdk(server) as client:
            agent = client.beta.agents.create(model="scripted", tools=[LOOKUP])  # type: ignore[list-item]
            stream = client.beta.agents.sessions.create(
                agent_id=agent.id,
                environment={"type": "none"},
                input="/say asking\n/call lookup {}\n/say got {result}",
                stream=True,
            )
            session_id = call_id = turn_id = None
            for event in stream:
                if event.type == "agent.session.created":
                    session_id = event.session.id
                if event.type == "agent.session.requires_action":
                    action = event.session.required_actions[0]  # type: ignore[attr-defined]
                    call_id, turn_id = action.call_id, action.turn_id
                    break
            stream.close()
            assert session_id and call_id and turn_id
            before = client.beta.agents.sessions.turns.list(session_id).data[0]
            checkpoint = x(before)["checkpoint"]
            assert checkpoint["boundary"] == "awaiting_function_result"
    finally:
        kill(server)

    restarted = start_server(data, port=server.port)
    try:
        with sdk(restarted) as client:
            session = client.beta.agents.sessions.retrieve(session_id)
            assert session.status == "requires_action"
            with client.beta.agents.sessions.events.stream(session_id) as live:
                client.beta.agents.sessions.events.create(
                    session_id,
                    events=[
                        {
                            "type": "agent.session.input.tool_result",
                            "turn_id": turn_id,
                            "call_id": call_id,
                            "success": True,
                            "output": "42",
                        }  # type: ignore[list-item]
                    ],
                )
                for event in live:
                    if event.type in ("agent.session.idle", "agent.session.failed"):
                        break
            turn = client.beta.agents.sessions.turns.list(session_id).data[0]
            assert turn.status == "completed", turn.error
            assert x(turn)["worker_epoch"] > x(before)["worker_epoch"]
            items = client.beta.agents.sessions.items.list(session_id, order="asc").data
            kinds = [i.type for i in items]
            assert kinds == [
                "message",
                "message",
                "function_call",
                "function_call_output",
                "message",
            ]
            texts = [i.content[0].text for i in items if i.type == "message"]  # type: ignore[union-attr]
            assert texts[1:] == ["asking", "got 42"]
            assert len(client.beta.agents.sessions.turns.list(session_id).data) == 1
    finally:
        restarted.stop()
