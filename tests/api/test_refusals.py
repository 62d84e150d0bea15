"""Input the hosted service refuses is refused here too, through the official SDK:
`stream_options` without `stream`, an empty `input`, a second `tool_result`, a bad key,
a missing required field."""

from __future__ import annotations

from typing import Any

import openai
import pytest
from openai import OpenAI

from tests.api.support import Surface, unchanged
from tests.api.test_turns import WEATHER_TOOL, idle_session, message, send

NONE_ENV: Any = {"type": "none"}


def test_stream_options_without_stream_is_refused(surface: Surface, client: OpenAI) -> None:
    with unchanged(surface.server.data_dir), pytest.raises(openai.BadRequestError) as raised:
        client.beta.agents.sessions.create(
            agent={"model": "scripted"},
            environment=NONE_ENV,
            input="hi",
            stream_options={"include_obfuscation": False},
        )
    assert raised.value.param == "stream_options"


@pytest.mark.parametrize("empty", ["", []])
def test_an_empty_input_is_refused(surface: Surface, client: OpenAI, empty: Any) -> None:
    for environment in (NONE_ENV, {"type": "openai_hosted"}):
        with unchanged(surface.server.data_dir), pytest.raises(openai.BadRequestError) as raised:
            client.beta.agents.sessions.create(
                agent={"model": "scripted"}, environment=environment, input=empty
            )
        assert raised.value.param == "input"


def test_a_bad_key_answers_invalid_api_key(surface: Surface) -> None:
    bad = surface.client("not-a-key")
    with pytest.raises(openai.AuthenticationError) as raised:
        bad.beta.agents.sessions.list()
    assert raised.value.code == "invalid_api_key"
    with pytest.raises(openai.AuthenticationError) as raised:
        bad.files.list()
    assert raised.value.code == "invalid_api_key"


def test_a_missing_required_field_is_named_in_param(client: OpenAI) -> None:
    with pytest.raises(openai.BadRequestError) as raised:
        client.post(
            "/agents/sessions",
            body={"agent": {"model": "scripted"}, "input": "hi"},
            cast_to=object,
            options={"headers": {"OpenAI-Beta": "agents=v1"}},
        )
    assert raised.value.param == "environment"
    with pytest.raises(openai.BadRequestError) as raised:
        client.beta.agents.create(model="scripted", tools=[{"type": "function"}])  # type: ignore[list-item]
    assert raised.value.param == "tools[0].name"


def _result(turn_id: str, call_id: str) -> dict[str, Any]:
    return {
        "type": "agent.session.input.tool_result",
        "turn_id": turn_id,
        "call_id": call_id,
        "success": True,
        "output": '{"forecast": "sunny"}',
    }


def test_a_second_tool_result_is_a_conflict_not_a_silent_202(client: OpenAI) -> None:
    agent = client.beta.agents.create(model="scripted", tools=[WEATHER_TOOL])  # type: ignore[list-item]
    session_id = idle_session(client, agent_id=agent.id)
    with client.beta.agents.sessions.events.stream(session_id) as live:
        send(client, session_id, message('/call get_weather {"city": "Oslo"}\n/say {result}'))
        for event in live:
            if event.type == "agent.session.requires_action":
                action = event.session.required_actions[0]
                break
        answer = _result(action.turn_id, action.call_id)  # type: ignore[union-attr]
        events = client.beta.agents.sessions.events
        events.create(session_id, events=[answer], extra_headers={"Idempotency-Key": "k1"})  # type: ignore[list-item]
        # The same batch replayed is accepted again, without effect.
        events.create(session_id, events=[answer], extra_headers={"Idempotency-Key": "k1"})  # type: ignore[list-item]
        with pytest.raises(openai.ConflictError):
            events.create(session_id, events=[answer], extra_headers={"Idempotency-Key": "k2"})  # type: ignore[list-item]
        for event in live:
            if event.type == "agent.session.idle":
                break
    # After the turn ended: still refused, and the unknown call is a 400.
    with pytest.raises(openai.ConflictError):
        send(client, session_id, answer)
    with pytest.raises(openai.BadRequestError):
        send(client, session_id, _result(action.turn_id, "call_unknown"))  # type: ignore[union-attr]
    outputs = [
        i
        for i in client.beta.agents.sessions.items.list(session_id).data
        if i.type == "function_call_output"
    ]
    assert len(outputs) == 1


@pytest.mark.parametrize("limit", [0, 101])
def test_a_limit_outside_1_to_100_is_refused_not_clamped(client: OpenAI, limit: int) -> None:
    for lister in (
        client.beta.agents.list,
        client.beta.agents.sessions.list,
        client.beta.agents.vaults.list,
        client.beta.agents.environments.list,
    ):
        with pytest.raises(openai.BadRequestError) as raised:
            lister(limit=limit)
        assert raised.value.param == "limit", lister


def test_a_second_approval_answer_is_a_conflict(client: OpenAI) -> None:
    session_id = idle_session(client)
    with client.beta.agents.sessions.events.stream(session_id) as live:
        send(client, session_id, message("/permission shell run it\n/say {decision}"))
        for event in live:
            if event.type == "agent.session.requires_action":
                action = event.session.required_actions[0]
                break
        answer = {
            "type": "agent.session.input.mcp_approval_request_result",
            "request_id": action.request_id,  # type: ignore[union-attr]
            "response": {"type": "mcp_tool_call", "decision": "approve"},
        }
        send(client, session_id, answer)
        with pytest.raises(openai.ConflictError):
            send(client, session_id, answer)
        for event in live:
            if event.type == "agent.session.idle":
                break
    items = client.beta.agents.sessions.items.list(session_id, order="desc", limit=1).data
    assert items[0].content[0].text == "approved"  # type: ignore[union-attr]
