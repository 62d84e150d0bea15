"""Durable turns through the official SDK: function calls, cancellation, steering,
permission requests and user choices."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from openai import OpenAI

from tests.api.test_run_control import sdk
from tests.conftest import start_server
from tests.support import databases

WEATHER_TOOL = {
    "type": "function",
    "name": "get_weather",
    "description": "Weather for a city.",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
        "additionalProperties": False,
    },
}


def idle_session(client: OpenAI, **agent: Any) -> str:
    if "agent_id" in agent:
        kwargs: dict[str, Any] = {"agent_id": agent["agent_id"]}
    else:
        kwargs = {"agent": {"model": "scripted", **agent}}
    events = list(
        client.beta.agents.sessions.create(
            environment={"type": "none"}, input="ready", stream=True, **kwargs
        )
    )
    assert events[-1].type == "agent.session.idle"  # type: ignore[attr-defined]
    return str(events[0].session.id)  # type: ignore[attr-defined]


def send(client: OpenAI, session_id: str, *events: dict[str, Any]) -> None:
    client.beta.agents.sessions.events.create(session_id, events=list(events))  # type: ignore[arg-type]


def message(text: str) -> dict[str, Any]:
    return {
        "type": "agent.session.input.message",
        "input": [{"role": "user", "content": [{"type": "input_text", "text": text}]}],
    }


def test_function_tool_round_trip_through_tool_handlers(client: OpenAI) -> None:
    agent = client.beta.agents.create(model="scripted", tools=[WEATHER_TOOL])  # type: ignore[list-item]
    session_id = idle_session(client, agent_id=agent.id)
    calls: list[dict[str, Any]] = []

    def get_weather(arguments: dict[str, Any]) -> dict[str, Any]:
        calls.append(arguments)
        return {"city": arguments["city"], "forecast": "sunny"}

    with client.beta.agents.sessions.stream(
        session_id,
        input='/call get_weather {"city": "Paris"}\n/say It is {result}',
        tool_handlers={"get_weather": get_weather},
    ) as stream:
        result = stream.get_final_result()
    assert calls == [{"city": "Paris"}]
    assert result.turn.status == "completed"
    assert json.loads(result.output_text.removeprefix("It is ")) == {
        "city": "Paris",
        "forecast": "sunny",
    }
    items = client.beta.agents.sessions.items.list(session_id, order="asc").data
    kinds = [i.type for i in items]
    assert kinds[-3:] == ["function_call", "function_call_output", "message"]
    assert client.beta.agents.sessions.retrieve(session_id).required_actions == []


def test_an_undeclared_function_fails_the_turn(client: OpenAI) -> None:
    session_id = idle_session(client)
    with client.beta.agents.sessions.events.stream(session_id) as live:
        send(client, session_id, message("/call nothing {}"))
        types = [e.type for e in _until_settled(live)]
    assert "agent.session.turn.failed" in types
    turn = client.beta.agents.sessions.turns.list(session_id).data[0]
    assert turn.error is not None and turn.error.code == "invalid_request"


def _until_settled(live: Any) -> list[Any]:
    seen = []
    for event in live:
        seen.append(event)
        if event.type in ("agent.session.idle", "agent.session.failed") and any(
            e.type.startswith("agent.session.turn.")
            and e.type.split(".")[-1] in ("completed", "failed", "cancelled")
            for e in seen
        ):
            return seen
    raise AssertionError("stream ended before the turn settled")


def test_cancelling_a_hanging_turn_ends_it_cancelled_and_the_session_idle(client: OpenAI) -> None:
    session_id = idle_session(client)
    with client.beta.agents.sessions.events.stream(session_id) as live:
        send(client, session_id, message("/say working\n/hang"))
        for event in live:
            if event.type == "agent.session.turn.item.done":
                break
        send(client, session_id, {"type": "agent.session.input.cancel"})
        rest = _until_settled(live)
    assert [e.type for e in rest][-2:] == ["agent.session.turn.cancelled", "agent.session.idle"]
    turn = client.beta.agents.sessions.turns.list(session_id).data[0]
    assert turn.status == "cancelled"
    assert client.beta.agents.sessions.retrieve(session_id).status == "idle"
    with client.beta.agents.sessions.stream(session_id, input="after") as stream:
        result = stream.get_final_result()
    assert (result.turn.status, result.output_text) == ("completed", "after")


def test_cancelling_a_queued_turn_is_immediate(client: OpenAI) -> None:
    session_id = idle_session(client)
    send(client, session_id, message("/sleep 10"), {"type": "agent.session.input.cancel"})
    turn = client.beta.agents.sessions.turns.list(session_id).data[0]
    assert turn.status in ("cancelled", "completed")  # completion may win a running turn


def test_a_message_during_a_turn_steers_it_as_its_own_user_item(client: OpenAI) -> None:
    session_id = idle_session(client)
    with client.beta.agents.sessions.events.stream(session_id) as live:
        send(client, session_id, message("/sleep 1500\n/say first"))
        for event in live:
            if event.type == "agent.session.turn.in_progress":
                break
        send(client, session_id, message("/say steered"))
        events = _until_settled(live)
    completed = [e for e in events if e.type == "agent.session.turn.completed"]
    assert completed, [e.type for e in events]
    turns = client.beta.agents.sessions.turns.list(session_id).data
    assert len(turns) == 2  # the steer joined the running turn
    items = client.beta.agents.sessions.turns.items.list(
        turns[0].id, session_id=session_id, order="asc"
    ).data
    users = [i.content[0].text for i in items if i.role == "user"]
    replies = [i.content[0].text for i in items if i.role == "assistant"]
    assert users == ["/sleep 1500\n/say first", "/say steered"]
    assert replies == ["first", "steered"]


def test_permission_request_is_answered_with_an_mcp_approval_result(client: OpenAI) -> None:
    session_id = idle_session(client)
    with client.beta.agents.sessions.events.stream(session_id) as live:
        send(client, session_id, message("/permission shell run the tests\n/say {decision}"))
        for event in live:
            if event.type == "agent.session.requires_action":
                action = event.session.required_actions[0]
                break
        assert action.type == "mcp_approval_request"
        assert action.request.message == "run the tests"
        send(
            client,
            session_id,
            {
                "type": "agent.session.input.mcp_approval_request_result",
                "request_id": action.request_id,
                "response": {"type": "mcp_tool_call", "decision": "deny"},
            },
        )
        _until_settled(live)
    items = client.beta.agents.sessions.items.list(session_id, order="desc", limit=1).data
    assert items[0].content[0].text == "denied"


def test_user_choice_is_a_corebox_extension_answered_by_question_id(
    client: OpenAI, server: Any
) -> None:
    session_id = idle_session(client)
    with client.beta.agents.sessions.events.stream(session_id) as live:
        send(client, session_id, message("/choose Colour? | red | blue\n/say {choice}"))
        for event in live:
            if event.type == "agent.session.requires_action":
                break
        session = client.beta.agents.sessions.retrieve(session_id)
        assert session.status == "requires_action" and session.required_actions == []
        prompt = session.x_corebox["required_actions"][0]  # type: ignore[attr-defined]
        assert prompt["type"] == "x_corebox_user_choice"
        question = prompt["questions"][0]
        assert [o["label"] for o in question["options"]] == ["red", "blue"]
        bad = {
            "type": "x_corebox.input.user_choice",
            "ask_id": prompt["ask_id"],
            "question_answers": [{"question_id": "nope", "answers": ["red"]}],
        }
        try:
            send(client, session_id, bad)
            raise AssertionError("an unknown question id was accepted")
        except Exception as exc:  # the SDK raises BadRequestError
            assert getattr(exc, "status_code", None) == 400
        send(
            client,
            session_id,
            {
                "type": "x_corebox.input.user_choice",
                "ask_id": prompt["ask_id"],
                "question_answers": [{"question_id": question["id"], "answers": ["blue"]}],
            },
        )
        _until_settled(live)
    items = client.beta.agents.sessions.items.list(session_id, order="desc", limit=1).data
    assert items[0].content[0].text == "blue"


def test_a_waiting_turn_is_the_sessions_state_after_the_clock_was_set_back(tmp_path: Path) -> None:
    """A turn made while the clock ran ahead (later set back, e.g. by NTP) is newer by
    `created_at` than the turn now waiting for an approval; the session still shows the
    waiting turn's state and the action it needs."""
    server = start_server(tmp_path / "data")
    try:
        with sdk(server) as client:
            session_id = idle_session(client)
            with databases.raw(databases.location(server.data_dir)) as db:
                db.execute(
                    "UPDATE turns SET created_at = created_at + ? WHERE session_id = ?",
                    (8 * 86_400, session_id),
                )
            send(client, session_id, message("/permission shell ls\n/say {decision}"))
            give_up = time.monotonic() + 60  # a hang guard: it is waiting within a second
            turns = client.beta.agents.sessions.turns
            while "waiting" not in [t.status for t in turns.list(session_id).data]:
                assert time.monotonic() < give_up, "the turn never waited for its approval"
                time.sleep(0.05)
            session = client.beta.agents.sessions.retrieve(session_id)
            assert session.status == "requires_action"
            assert [a.type for a in session.required_actions] == ["mcp_approval_request"]
    finally:
        server.stop()
