"""Bad input gets the API's error format and changes nothing."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

import openai
import pytest
from openai import OpenAI

from tests.conftest import API_KEY, Server
from tests.support.sdk import sdk_client


def raw(
    server: Server,
    method: str,
    path: str,
    body: bytes | None = None,
    headers: dict[str, str] | None = None,
) -> tuple[int, dict[str, object]]:
    request = urllib.request.Request(
        f"{server.base_url}{path}", data=body, method=method, headers=headers or {}
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as reply:
            return reply.status, json.loads(reply.read() or b"{}")
    except urllib.error.HTTPError as exc:
        with exc:
            return exc.code, json.loads(exc.read())


AUTH = {
    "Authorization": f"Bearer {API_KEY}",
    "OpenAI-Beta": "agents=v1",
    "Content-Type": "application/json",
}


def _session(client: OpenAI) -> str:
    events = list(
        client.beta.agents.sessions.create(
            agent={"model": "scripted"}, environment={"type": "none"}, input="x", stream=True
        )
    )
    return events[0].session.id  # type: ignore[attr-defined]


def test_wrong_key_is_401(server: Server) -> None:
    bad = sdk_client(base_url=f"{server.base_url}/v1", api_key="wrong", max_retries=0)
    with bad, pytest.raises(openai.AuthenticationError) as caught:
        bad.beta.agents.create(model="scripted")
    assert caught.value.status_code == 401
    assert "wrong" not in str(caught.value.body)


def test_missing_beta_header_is_invalid_beta(server: Server) -> None:
    headers = {k: v for k, v in AUTH.items() if k != "OpenAI-Beta"}
    status, body = raw(server, "POST", "/v1/agents", b'{"model": "scripted"}', headers)
    assert status == 400
    assert body["error"]["code"] == "invalid_beta"  # type: ignore[index]
    assert body["error"]["type"] == "invalid_beta"  # type: ignore[index]


def test_malformed_json_is_400_and_creates_nothing(server: Server, client: OpenAI) -> None:
    session_id = _session(client)
    before = client.beta.agents.sessions.turns.list(session_id).data
    status, body = raw(
        server, "POST", f"/v1/agents/sessions/{session_id}/events", b'{"events": [', AUTH
    )
    assert status == 400
    assert set(body["error"]) == {"message", "type", "param", "code"}  # type: ignore[arg-type]
    assert client.beta.agents.sessions.turns.list(session_id).data == before


def test_invalid_fields_name_the_parameter(server: Server) -> None:
    status, body = raw(server, "POST", "/v1/agents", b'{"model": 5}', AUTH)
    assert status == 400
    assert body["error"]["param"] == "model"  # type: ignore[index]
    status, body = raw(server, "POST", "/v1/agents", b'{"model": "m", "colour": "red"}', AUTH)
    assert status == 400


def test_a_refused_value_is_answered_with_the_values_accepted_there(
    server: Server, client: OpenAI
) -> None:
    session_id = _session(client)
    before = client.beta.agents.sessions.turns.list(session_id).data
    wrong: Any = [{"type": "user.message", "content": "hi"}]
    with pytest.raises(openai.BadRequestError) as caught:
        client.beta.agents.sessions.events.create(session_id, events=wrong)
    assert caught.value.param == "events[0].type"
    assert "'user.message'" in caught.value.message
    accepted_types = (
        "message",
        "cancel",
        "tool_result",
        "mcp_approval_request_result",
        "computer_use_approval_request_result",
    )
    for accepted in accepted_types:
        assert f"'agent.session.input.{accepted}'" in caught.value.message
    assert client.beta.agents.sessions.turns.list(session_id).data == before
    with pytest.raises(openai.BadRequestError) as caught:
        client.beta.agents.sessions.create(
            agent={"model": "scripted"},
            environment={"type": "docker"},  # type: ignore[typeddict-item]
            input="x",
        )
    assert caught.value.param == "environment.type"
    assert "'none', 'openai_hosted', 'self_hosted'" in caught.value.message
    # A field that is not a closed set of values keeps msgspec's own message.
    status, body = raw(server, "POST", "/v1/agents", b'{"model": 5}', AUTH)
    assert status == 400
    assert body["error"]["message"] == "Invalid request: Expected `str`, got `int`."  # type: ignore[index]


def test_an_unknown_field_is_answered_with_the_known_field_it_misspells(
    server: Server, client: OpenAI
) -> None:
    before = client.beta.agents.list().data
    body = b'{"model": "scripted", "instruction": "Be brief."}'
    status, reply = raw(server, "POST", "/v1/agents", body, AUTH)
    assert status == 400
    assert reply["error"] == {
        "message": "Invalid request: Object contains unknown field `instruction`;"
        " did you mean `instructions`?",
        "type": "invalid_request_error",
        "param": "instruction",
        "code": None,
    }
    body = b'{"agent": {"model": "scripted", "reasoning": {"efort": "low"}}, "input": "x"}'
    status, reply = raw(server, "POST", "/v1/agents/sessions", body, AUTH)
    assert status == 400
    assert reply["error"]["param"] == "agent.reasoning.efort"  # type: ignore[index]
    assert reply["error"]["message"].endswith("did you mean `effort`?")  # type: ignore[index]
    # A name near no known field keeps msgspec's own message.
    status, reply = raw(server, "POST", "/v1/agents", b'{"model": "scripted", "zzz": 1}', AUTH)
    assert status == 400
    message = "Invalid request: Object contains unknown field `zzz`."
    assert reply["error"]["message"] == message  # type: ignore[index]
    assert client.beta.agents.list().data == before


def test_a_saved_agent_named_inside_agent_is_pointed_to_agent_id(client: OpenAI) -> None:
    saved = client.beta.agents.create(model="scripted")
    sessions = client.beta.agents.sessions.list().data
    with pytest.raises(openai.BadRequestError) as caught:
        client.beta.agents.sessions.create(
            agent={"id": saved.id},  # type: ignore[typeddict-unknown-key]
            environment={"type": "none"},
            input="x",
        )
    assert caught.value.param == "agent.id"
    assert caught.value.body == {
        "message": "Invalid request: Object contains unknown field `id`; did you mean `agent_id`?",
        "type": "invalid_request_error",
        "param": "agent.id",
        "code": None,
    }
    assert client.beta.agents.sessions.list().data == sessions


def test_a_field_put_inside_agent_is_placed_one_level_up(client: OpenAI) -> None:
    sessions = client.beta.agents.sessions.list().data
    with pytest.raises(openai.BadRequestError) as caught:
        client.beta.agents.sessions.create(
            agent={"model": "scripted", "input": "Hello"},  # type: ignore[typeddict-unknown-key]
            environment={"type": "none"},
        )
    assert caught.value.body == {
        "message": "Invalid request: Object contains unknown field `input`;"
        " `input` belongs one level up, beside `agent`.",
        "type": "invalid_request_error",
        "param": "agent.input",
        "code": None,
    }
    assert client.beta.agents.sessions.list().data == sessions


_COMPUTER_USE = "agent.session.input.computer_use_approval_request_result"


def _said(refusal: openai.APIStatusError) -> str:
    """The error's own message, without the SDK's "Error code: 400 - " before it."""
    return str(refusal.body["message"])  # type: ignore[index]


def test_a_computer_use_answer_is_read_whole_and_refused_as_no_such_request_is_pending(
    client: OpenAI,
) -> None:
    # No harness here drives a browser, so nothing ever asks for a sign-in or an origin:
    # each of the SDK's three answers is understood, then refused by the request it names.
    session_id = _session(client)
    before = client.beta.agents.sessions.items.list(session_id).data
    secret = "hunter2-do-not-echo"
    answers: list[dict[str, Any]] = [
        {
            "type": "browser_authentication",
            "action": "submit",
            "fields": [{"field_id": "password", "value": secret}],
            "selected_option": None,
        },
        {"type": "browser_authentication", "action": "cancel"},
        {"type": "browser_origin_access", "decision": "approve"},
    ]
    hello = {
        "type": "agent.session.input.message",
        "input": [{"role": "user", "content": [{"type": "input_text", "text": "hi"}]}],
    }
    for response in answers:
        event = {"type": _COMPUTER_USE, "request_id": "cuar_1", "response": response}
        with pytest.raises(openai.BadRequestError) as caught:
            client.beta.agents.sessions.events.create(session_id, events=[hello, event])  # type: ignore[list-item]
        assert _said(caught.value) == "Unknown pending request: cuar_1"
        assert caught.value.param == "events[1].request_id"
        assert secret not in str(caught.value.body)
    seven = [{"field_id": f"f{n}", "value": "v"} for n in range(7)]
    huge = [{"field_id": "password", "value": "x" * (121 * 1024)}]
    twice = [{"field_id": "password", "value": secret}] * 2
    sign_in = {"type": "browser_authentication", "action": "submit"}
    malformed: list[tuple[dict[str, Any], str]] = [
        ({**sign_in, "action": "cancel", "fields": []}, "A cancelled sign-in carries no"),
        (sign_in, "A submitted sign-in needs `fields`"),
        ({**sign_in, "fields": seven}, "length <= 6"),
        ({**sign_in, "fields": huge}, "must fit in 120 KiB of JSON"),
        ({**sign_in, "fields": twice}, "Each field is submitted at most once"),
        # Read as this event's response alone: each value once, none of another event's.
        (
            {"type": "browser_origin_access", "decision": "maybe"},
            "decision must be one of 'approve', 'cancel', 'deny'.",
        ),
        ({"type": "browser_origin_access", "action": "submit"}, "unknown field `action`"),
        (
            {"type": "browser_window"},
            "type must be one of 'browser_authentication', 'browser_origin_access'.",
        ),
    ]
    for response, said in malformed:
        event = {"type": _COMPUTER_USE, "request_id": "cuar_1", "response": response}
        with pytest.raises(openai.BadRequestError) as caught:
            client.beta.agents.sessions.events.create(session_id, events=[event])  # type: ignore[list-item]
        assert said in _said(caught.value), _said(caught.value)
        assert str(caught.value.param).startswith("events[0].response"), caught.value.param
        assert secret not in str(caught.value.body)
    # An MCP answer's response is read as an MCP answer's, not as a computer-use one's.
    event = {
        "type": "agent.session.input.mcp_approval_request_result",
        "request_id": "mcpr_1",
        "response": {"type": "browser_origin_access", "decision": "approve"},
    }
    with pytest.raises(openai.BadRequestError) as caught:
        client.beta.agents.sessions.events.create(session_id, events=[event])  # type: ignore[list-item]
    assert _said(caught.value) == (
        "Invalid request: Invalid enum value 'browser_origin_access';"
        " events[0].response.type must be 'mcp_tool_call'."
    )
    assert client.beta.agents.sessions.items.list(session_id).data == before
    assert client.beta.agents.sessions.retrieve(session_id).status == "idle"


def test_an_answer_to_nothing_pending_names_the_field_that_names_it(client: OpenAI) -> None:
    session_id = _session(client)
    turn_id = client.beta.agents.sessions.turns.list(session_id).data[0].id
    unknown: list[tuple[dict[str, Any], str, str]] = [
        (
            {
                "type": "agent.session.input.tool_result",
                "turn_id": turn_id,
                "call_id": "call_nope",
                "success": True,
                "output": "x",
            },
            "Unknown pending tool call: call_nope",
            "events[0].call_id",
        ),
        (
            {
                "type": "agent.session.input.mcp_approval_request_result",
                "request_id": "mcpr_nope",
                "response": {"type": "mcp_tool_call", "decision": "approve"},
            },
            "Unknown pending request: mcpr_nope",
            "events[0].request_id",
        ),
        (
            {"type": "x_corebox.input.user_choice", "ask_id": "ask_nope", "cancelled": True},
            "Unknown pending request: ask_nope",
            "events[0].ask_id",
        ),
    ]
    for event, message, param in unknown:
        with pytest.raises(openai.BadRequestError) as caught:
            client.beta.agents.sessions.events.create(session_id, events=[event])  # type: ignore[list-item]
        assert (_said(caught.value), caught.value.param) == (message, param)


def test_unknown_session_is_404(client: OpenAI) -> None:
    with pytest.raises(openai.NotFoundError) as caught:
        client.beta.agents.sessions.retrieve("sess_missing")
    assert caught.value.code == "not_found_error"
    with pytest.raises(openai.NotFoundError):
        client.beta.agents.sessions.events.create(
            "sess_missing", events=[{"type": "agent.session.input.cancel"}]
        )


def test_unknown_route_is_404_unsupported_operation(server: Server) -> None:
    status, body = raw(server, "GET", "/v1/agents/sessions/x/nothing-here", None, AUTH)
    assert status == 404
    assert body["error"]["code"] == "unsupported_operation"  # type: ignore[index]


def test_environment_none_requires_input(client: OpenAI) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        client.beta.agents.sessions.create(
            agent={"model": "scripted"}, environment={"type": "none"}
        )
    assert caught.value.param == "input"


def test_idempotency_key_replays_a_batch_and_refuses_a_different_one(
    server: Server, client: OpenAI
) -> None:
    session_id = _session(client)
    message = {
        "type": "agent.session.input.message",
        "input": [{"role": "user", "content": [{"type": "input_text", "text": "one"}]}],
    }
    headers = {**AUTH, "Idempotency-Key": "batch-1"}
    path = f"/v1/agents/sessions/{session_id}/events"
    assert raw(server, "POST", path, json.dumps({"events": [message]}).encode(), headers)[0] == 202
    assert raw(server, "POST", path, json.dumps({"events": [message]}).encode(), headers)[0] == 202
    turns = client.beta.agents.sessions.turns.list(session_id).data
    assert len(turns) == 2  # the creation turn and exactly one more
    other = {
        **message,
        "input": [{"role": "user", "content": [{"type": "input_text", "text": "two"}]}],
    }
    status, body = raw(server, "POST", path, json.dumps({"events": [other]}).encode(), headers)
    assert status == 409
    assert body["error"]["code"] == "idempotency_conflict"  # type: ignore[index]
    assert len(client.beta.agents.sessions.turns.list(session_id).data) == 2
