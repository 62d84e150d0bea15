"""A message sent while a turn waits for a function result (README "Pending actions"):
it steers the turn as its own user item, the function result is still delivered and
applied, and the turn continues and completes, also across a pause and resume and
across kill -9 of the server between the message and the result."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from openai import OpenAI

from tests.api import test_run_control as control
from tests.api.support import until
from tests.api.test_reclaim import kill
from tests.api.test_run_control import awaiting, command, run_state, sdk
from tests.api.test_turns import WEATHER_TOOL, message, send
from tests.conftest import Server, start_server

SCRIPT = '/call get_weather {"city":"Paris"}\n/say got {result}'


def waiting_session(client: OpenAI) -> tuple[str, Any]:
    """A scripted session whose turn waits for `get_weather`, and the pending call."""
    agent = client.beta.agents.create(model="scripted", tools=[WEATHER_TOOL])  # type: ignore[list-item]
    return awaiting(client, agent.id, SCRIPT)


def result(action: Any, output: str = "sunny") -> dict[str, Any]:
    return {
        "type": "agent.session.input.tool_result",
        "turn_id": action.turn_id,
        "call_id": action.call_id,
        "success": True,
        "output": output,
    }


# A turn still running after this long never ends: the test fails, not hangs.
NEVER_SETTLES = 60.0


def settled(client: OpenAI, session_id: str) -> None:
    """Return once the session's turn has ended."""

    def ended() -> bool:
        turn = client.beta.agents.sessions.turns.list(session_id, limit=1).data[0]
        return turn.status in ("completed", "failed", "cancelled")

    until(ended, NEVER_SETTLES)


def assert_steered_and_completed(client: OpenAI, session_id: str) -> dict[str, Any]:
    turns = client.beta.agents.sessions.turns.list(session_id).data
    assert len(turns) == 1  # the message joined the waiting turn
    turn = turns[0]
    assert turn.status == "completed", turn.error
    assert turn.x_corebox["unknown_inputs"] == 0  # type: ignore[attr-defined]
    items = client.beta.agents.sessions.items.list(session_id, order="asc").data
    assert [(i.type, getattr(i, "role", None)) for i in items] == [
        ("message", "user"),
        ("function_call", None),
        ("message", "user"),
        ("function_call_output", None),
        ("message", "assistant"),
        ("message", "assistant"),
    ]
    texts = [i.content[0].text for i in items if i.type == "message"]  # type: ignore[union-attr]
    assert texts == [SCRIPT, "/say steered", "got sunny", "steered"]
    assert getattr(items[2], "x_corebox", None) is None  # not marked unknown
    session = client.beta.agents.sessions.retrieve(session_id)
    assert (session.status, session.required_actions) == ("idle", [])
    return dict(turn.x_corebox)  # type: ignore[attr-defined]


def test_a_message_then_the_function_result_both_reach_the_waiting_turn(
    client: OpenAI,
) -> None:
    session_id, action = waiting_session(client)
    send(client, session_id, message("/say steered"))
    session = client.beta.agents.sessions.retrieve(session_id)
    assert session.status == "requires_action"
    assert [a.call_id for a in session.required_actions] == [action.call_id]  # type: ignore[union-attr]
    send(client, session_id, result(action))
    settled(client, session_id)
    assert_steered_and_completed(client, session_id)


@pytest.mark.parametrize("answered", ["before_resume", "after_resume"])
def test_a_message_sent_while_a_waiting_turn_is_paused_steers_it_after_resume(
    server: Server, client: OpenAI, answered: str
) -> None:
    session_id, action = waiting_session(client)
    paused = command(server, session_id, "pause")
    assert control.settled(server, paused.json()["id"])["status"] == "applied"
    assert run_state(client, session_id)["phase"] == "paused"
    send(client, session_id, message("/say steered"))
    if answered == "before_resume":
        send(client, session_id, result(action))
    resumed = command(server, session_id, "resume")
    assert control.settled(server, resumed.json()["id"])["status"] == "applied"
    if answered == "after_resume":
        send(client, session_id, result(action))
    settled(client, session_id)
    assert_steered_and_completed(client, session_id)


def test_a_message_to_a_waiting_turn_survives_kill_9_before_the_result(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    server = start_server(data)
    try:
        with sdk(server) as client:
            session_id, action = waiting_session(client)
            before = run_state(client, session_id)
            send(client, session_id, message("/say steered"))
    finally:
        kill(server)

    restarted = start_server(data, port=server.port)
    try:
        with sdk(restarted) as client:
            session = client.beta.agents.sessions.retrieve(session_id)
            assert session.status == "requires_action"
            assert [a.call_id for a in session.required_actions] == [action.call_id]  # type: ignore[union-attr]
            send(client, session_id, result(action))
            settled(client, session_id)
            after = assert_steered_and_completed(client, session_id)
            assert after["worker_epoch"] > before["worker_epoch"]
    finally:
        restarted.stop()
