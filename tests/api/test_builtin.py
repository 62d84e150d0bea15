"""The `builtin` harness end to end: the official SDK against a real `corebox serve`,
whose builtin turns call the project's own loopback model server (real chat.completions
and responses streaming formats)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pydantic
import pytest
from openai import OpenAI

from tests.api.support import Surface, until
from tests.conftest import Server, start_server
from tests.support.mcp_server import TOKEN, McpTestServer
from tests.support.model_server import MODEL, ModelServer, Reply

KEY = "sk-model-secret-0123456789"
WEATHER = {
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


@pytest.fixture
def model() -> Iterator[ModelServer]:
    with ModelServer().running() as server:
        yield server


def provider(model: ModelServer, protocol: str = "chat_completions") -> dict[str, Any]:
    return {"protocol": protocol, "base_url": model.base_url, "api_key": KEY}


def create(
    client: OpenAI,
    model: ModelServer,
    text: str,
    *,
    protocol: str = "chat_completions",
    agent: dict[str, Any] | None = None,
    environment: dict[str, Any] | None = None,
) -> tuple[str, list[Any]]:
    """A builtin session (provider given on the session) and the events of its first turn."""
    events = list(
        client.beta.agents.sessions.create(
            agent={"model": MODEL, **(agent or {})},  # type: ignore[arg-type]
            environment=environment or {"type": "none"},  # type: ignore[arg-type]
            input=text,
            stream=True,
            extra_body={"x_corebox": {"model_provider": provider(model, protocol)}},
        )
    )
    return str(events[0].session.id), events


def send(client: OpenAI, session_id: str, *events: dict[str, Any]) -> None:
    client.beta.agents.sessions.events.create(session_id, events=list(events))  # type: ignore[arg-type]


def message(text: str) -> dict[str, Any]:
    return {
        "type": "agent.session.input.message",
        "input": [{"role": "user", "content": [{"type": "input_text", "text": text}]}],
    }


def until_settled(live: Any) -> list[Any]:
    seen = []
    for event in live:
        seen.append(event)
        if event.type in ("agent.session.idle", "agent.session.failed") and any(
            e.type.rsplit(".", 1)[-1] in ("completed", "failed", "cancelled")
            and e.type.startswith("agent.session.turn.")
            and not e.type.startswith("agent.session.turn.item")
            for e in seen
        ):
            return seen
    raise AssertionError("the stream ended before the turn settled")


def latest_turn(client: OpenAI, session_id: str) -> Any:
    return client.beta.agents.sessions.turns.list(session_id, limit=1).data[0]


@pytest.mark.parametrize("protocol", ["chat_completions", "responses"])
def test_a_reply_streams_with_usage(client: OpenAI, model: ModelServer, protocol: str) -> None:
    model.queue(Reply.say("Hello from the model.", usage=(31, 5)))
    session_id, events = create(client, model, "hi", protocol=protocol)
    deltas = [e.delta for e in events if e.type == "agent.session.turn.output_text.delta"]
    assert "".join(deltas) == "Hello from the model."
    turn = latest_turn(client, session_id)
    assert turn.status == "completed"
    assert (turn.usage.input_tokens, turn.usage.output_tokens) == (31, 5)
    session = client.beta.agents.sessions.retrieve(session_id)
    extension = session.x_corebox  # type: ignore[attr-defined]
    assert extension["harness"] == "builtin"
    assert extension["model_provider"] == {
        "protocol": protocol,
        "base_url": model.base_url,
        "model": "",
        "source": "session",
    }
    assert model.requests[0].authorization == f"Bearer {KEY}"
    assert model.requests[0].body["model"] == MODEL


def test_a_function_tool_round_trip_through_tool_handlers(
    client: OpenAI, model: ModelServer
) -> None:
    model.queue(Reply.say("Ready."))
    session_id, _ = create(client, model, "hello", agent={"tools": [WEATHER]})
    model.queue(Reply.call("get_weather", {"city": "Paris"}), Reply.say("Sunny in Paris."))
    calls: list[dict[str, Any]] = []

    def get_weather(arguments: dict[str, Any]) -> dict[str, Any]:
        calls.append(arguments)
        return {"forecast": "sunny"}

    with client.beta.agents.sessions.stream(
        session_id, input="Weather in Paris?", tool_handlers={"get_weather": get_weather}
    ) as stream:
        result = stream.get_final_result()
    assert calls == [{"city": "Paris"}]
    assert result.turn.status == "completed"
    assert result.output_text == "Sunny in Paris."
    kinds = [i.type for i in client.beta.agents.sessions.items.list(session_id, order="asc").data]
    assert kinds[-3:] == ["function_call", "function_call_output", "message"]
    # The model saw the result, after the first turn's exchange (the session remembers).
    messages = model.requests[-1].body["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user", "assistant", "tool"]
    assert json.loads(messages[-1]["content"]) == {"forecast": "sunny"}


def answered(client: OpenAI, session_id: str, action: Any) -> None:
    """Answer the pending `get_weather` call with "21 degrees" and return once the
    session's latest turn has ended; a turn that never ends fails the test after a
    minute rather than hang it."""
    send(
        client,
        session_id,
        {
            "type": "agent.session.input.tool_result",
            "turn_id": action.turn_id,
            "call_id": action.call_id,
            "success": True,
            "output": "21 degrees",
        },
    )
    ended = ("completed", "failed", "cancelled")
    until(lambda: latest_turn(client, session_id).status in ended, 60.0)


@pytest.mark.parametrize("protocol", ["chat_completions", "responses"])
def test_a_message_while_a_function_result_is_awaited_reaches_the_next_model_call(
    client: OpenAI, model: ModelServer, protocol: str
) -> None:
    model.queue(Reply.say("Ready."))
    session_id, _ = create(client, model, "hello", protocol=protocol, agent={"tools": [WEATHER]})
    model.queue(Reply.call("get_weather", {"city": "Paris"}), Reply.say("Sunny, in Celsius."))
    with client.beta.agents.sessions.events.stream(session_id) as live:
        send(client, session_id, message("Weather in Paris?"))
        for event in live:
            if event.type == "agent.session.requires_action":
                action = event.session.required_actions[0]
                break
    send(client, session_id, message("Use Celsius."))
    answered(client, session_id, action)
    turns = client.beta.agents.sessions.turns.list(session_id).data
    assert [t.status for t in turns] == ["completed", "completed"]  # the message joined it
    items = client.beta.agents.sessions.items.list(session_id, order="asc").data[2:]
    assert [(i.type, getattr(i, "role", None)) for i in items] == [
        ("message", "user"),
        ("function_call", None),
        ("message", "user"),
        ("function_call_output", None),
        ("message", "assistant"),
    ]
    assert items[-1].content[0].text == "Sunny, in Celsius."  # type: ignore[union-attr]
    # One model call after the wait, which saw the result and then the message.
    assert len(model.requests) == 3
    seen = json.dumps(model.requests[-1].body)
    assert 0 < seen.index("21 degrees") < seen.index("Use Celsius.")


def test_a_message_steered_into_a_model_call_that_then_awaits_a_function_result(
    client: OpenAI, model: ModelServer
) -> None:
    """The message reaches the Run while the model writes; the model then calls a
    function, so the Run takes the message only after the result, which must still be
    delivered although the message's acceptance is outstanding."""
    model.queue(Reply.say("Ready."))
    session_id, _ = create(client, model, "hello", agent={"tools": [WEATHER]})
    model.queue(
        Reply(text="Checking.", calls=[("get_weather", {"city": "Paris"})], hang=True),
        Reply.say("Sunny, in Celsius."),
    )
    send(client, session_id, message("Weather in Paris?"))
    assert model.hanging.wait(60)
    send(client, session_id, message("Use Celsius."))
    model.release.set()
    action = until(lambda: client.beta.agents.sessions.retrieve(session_id).required_actions, 60.0)[
        0
    ]
    answered(client, session_id, action)
    turns = client.beta.agents.sessions.turns.list(session_id).data
    assert [t.status for t in turns] == ["completed", "completed"]
    assert len(model.requests) == 3
    seen = json.dumps(model.requests[-1].body)
    assert 0 < seen.index("21 degrees") < seen.index("Use Celsius.")


def test_structured_output(client: OpenAI, model: ModelServer) -> None:
    class Answer(pydantic.BaseModel):
        answer: int

    model.queue(Reply.say('{"answer": 42}'))
    stream = client.beta.agents.sessions.create(
        agent={"model": MODEL},
        environment={"type": "none"},
        input="What is six times seven?",
        stream=True,
        output_type=Answer,
        extra_body={"x_corebox": {"model_provider": provider(model)}},
    )
    result = stream.get_final_result()
    assert result.output_parsed == Answer(answer=42)
    response_format = model.requests[0].body["response_format"]
    assert response_format["type"] == "json_schema"
    assert response_format["json_schema"]["schema"]["properties"]["answer"]["type"] == "integer"


def test_cancellation_mid_stream(client: OpenAI, model: ModelServer) -> None:
    model.queue(Reply.say("Ready."))
    session_id, _ = create(client, model, "hello")
    model.queue(Reply.say("a very long story about nothing", hang=True))
    with client.beta.agents.sessions.events.stream(session_id) as live:
        send(client, session_id, message("tell me a story"))
        for event in live:
            if event.type == "agent.session.turn.output_text.delta":
                break
        send(client, session_id, {"type": "agent.session.input.cancel"})
        rest = until_settled(live)
    assert "agent.session.turn.cancelled" in [e.type for e in rest]
    assert latest_turn(client, session_id).status == "cancelled"
    message_item = client.beta.agents.sessions.items.list(session_id, order="desc", limit=1).data
    assert message_item[0].status == "incomplete"
    model.release.set()
    assert model.client_left.wait(10)  # corebox closed the model stream


def test_a_429_is_rate_limit_exceeded(client: OpenAI, model: ModelServer) -> None:
    model.queue(Reply.fail(429, "rate_limit_exceeded"))
    session_id, _ = create(client, model, "hi")
    turn = latest_turn(client, session_id)
    assert turn.status == "failed"
    assert turn.error is not None and turn.error.code == "rate_limit_exceeded"
    assert "scripted failure" not in turn.error.message  # the provider's text is not echoed


def test_the_api_key_is_never_returned_or_logged(
    client: OpenAI, model: ModelServer, server: Server
) -> None:
    model.queue(Reply.say("ok"))
    agent = client.beta.agents.create(
        model=MODEL,
        extra_body={"x_corebox": {"model_provider": provider(model)}},
    )
    raw = client.beta.agents.with_raw_response.retrieve(agent.id)
    assert KEY not in raw.http_response.text
    events = list(
        client.beta.agents.sessions.create(
            agent_id=agent.id, environment={"type": "none"}, input="hi", stream=True
        )
    )
    session_id = str(events[0].session.id)
    raw_session = client.beta.agents.sessions.with_raw_response.retrieve(session_id)
    assert KEY not in raw_session.http_response.text
    assert raw_session.parse().x_corebox["model_provider"]["source"] == "agent"  # type: ignore[attr-defined]
    assert model.requests[-1].authorization == f"Bearer {KEY}"
    assert KEY not in server.log.read_text(encoding="utf-8", errors="replace")


def test_a_provider_needs_a_key_and_a_sane_url(surface: Surface, model: ModelServer) -> None:
    client = surface.new_client()
    bad = [
        ({"base_url": model.base_url}, "x_corebox.model_provider.api_key"),
        ({"base_url": "ftp://x", "api_key": KEY}, "x_corebox.model_provider.base_url"),
        (
            {"base_url": model.base_url, "api_key": KEY, "protocol": "anthropic"},
            "x_corebox.model_provider.protocol",
        ),
    ]
    for value, param in bad:
        with pytest.raises(Exception) as caught:
            client.beta.agents.sessions.create(
                agent={"model": MODEL},
                environment={"type": "none"},
                input="hi",
                extra_body={"x_corebox": {"model_provider": value}},
            )
        assert getattr(caught.value, "status_code", None) == 400
        assert caught.value.body["param"] == param  # type: ignore[attr-defined]
        assert KEY not in str(caught.value.body)  # type: ignore[attr-defined]


def test_an_mcp_tool_with_a_vault_bearer_credential(surface: Surface, model: ModelServer) -> None:
    client = surface.new_client()
    with McpTestServer().running() as tools:
        vault = client.beta.agents.vaults.create(name="tools")
        credential = client.beta.agents.vaults.credentials.create(
            vault.id,
            name="calc",
            auth={"type": "static_bearer", "mcp_server_url": tools.url, "token": TOKEN},
        )
        tool = {
            "type": "mcp",
            "server_label": "calc",
            "transport": {"type": "http", "server_url": tools.url},
            "credential_id": credential.id,
        }
        model.queue(Reply.call("calc__add", {"a": 40, "b": 2}), Reply.say("It is 42."))
        session_id, _ = create(client, model, "40 + 2?", agent={"tools": [tool]})
    assert tools.calls == [("add", {"a": 40, "b": 2})]
    assert latest_turn(client, session_id).status == "completed"
    mcp = [
        i for i in client.beta.agents.sessions.items.list(session_id).data if i.type == "mcp_call"
    ]
    assert len(mcp) == 1
    assert (mcp[0].server_label, mcp[0].name, mcp[0].output, mcp[0].status) == (
        "calc",
        "add",
        "42",
        "completed",
    )


def test_workspace_write_then_read(client: OpenAI, model: ModelServer, tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    model.queue(
        Reply.call("write_file", {"path": "plan.md", "content": "step one"}),
        Reply.call("read_file", {"path": "plan.md"}),
        Reply.say("Saved and checked."),
    )
    session_id, _ = create(
        client,
        model,
        "write a plan",
        environment={"type": "self_hosted", "workspace_directory": str(workspace)},
    )
    assert latest_turn(client, session_id).status == "completed"
    assert (workspace / "plan.md").read_text() == "step one"
    assert model.requests[2].body["messages"][-1]["content"] == "step one"


@pytest.mark.parametrize("decision", ["approve", "deny"])
def test_a_command_asks_for_approval(
    client: OpenAI, model: ModelServer, tmp_path: Path, decision: str
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    model.queue(Reply.say("Ready."))
    session_id, _ = create(
        client,
        model,
        "hello",
        environment={"type": "self_hosted", "workspace_directory": str(workspace)},
    )
    model.queue(Reply.call("run_command", {"command": "echo made > made.txt"}), Reply.say("Done."))
    with client.beta.agents.sessions.events.stream(session_id) as live:
        send(client, session_id, message("make a file"))
        for event in live:
            if event.type == "agent.session.requires_action":
                action = event.session.required_actions[0]
                break
        assert action.type == "mcp_approval_request"
        assert action.request.message == "echo made > made.txt"
        send(
            client,
            session_id,
            {
                "type": "agent.session.input.mcp_approval_request_result",
                "request_id": action.request_id,
                "response": {"type": "mcp_tool_call", "decision": decision},
            },
        )
        until_settled(live)
    assert latest_turn(client, session_id).status == "completed"
    commands = [
        i
        for i in client.beta.agents.sessions.items.list(session_id).data
        if i.type == "command_execution"
    ]
    told = model.requests[-1].body["messages"][-1]["content"]
    if decision == "approve":
        assert (workspace / "made.txt").read_text() == "made\n"
        assert [(c.command, c.exit_code) for c in commands] == [("echo made > made.txt", 0)]
        assert told == "exit code 0\n"
    else:
        assert not (workspace / "made.txt").exists()
        assert commands == []
        assert told == "The user denied running this command."


def test_a_deployment_default_provider(tmp_path: Path, model: ModelServer) -> None:
    running = start_server(
        tmp_path / "data",
        extra_env={
            "COREBOX_MODEL_BASE_URL": model.base_url,
            "COREBOX_MODEL": "local-llama",
            "COREBOX_MODEL_API_KEY": KEY,
        },
    )
    try:
        with OpenAI(
            base_url=f"{running.base_url}/v1",
            api_key="test-key",
            max_retries=0,
            _strict_response_validation=True,
        ) as sdk:
            model.queue(Reply.say("From the default model."))
            events = list(
                sdk.beta.agents.sessions.create(
                    agent={"model": "gpt-anything"},
                    environment={"type": "none"},
                    input="hi",
                    stream=True,
                )
            )
            session = sdk.beta.agents.sessions.retrieve(str(events[0].session.id))
            assert session.x_corebox["harness"] == "builtin"  # type: ignore[attr-defined]
            assert session.x_corebox["model_provider"]["source"] == "default"  # type: ignore[attr-defined]
            assert model.requests[-1].body["model"] == "local-llama"
            assert model.requests[-1].authorization == f"Bearer {KEY}"
            # `scripted` stays the scripted harness.
            scripted = list(
                sdk.beta.agents.sessions.create(
                    agent={"model": "scripted"},
                    environment={"type": "none"},
                    input="echo me",
                    stream=True,
                )
            )
            retrieved = sdk.beta.agents.sessions.retrieve(str(scripted[0].session.id))
            assert retrieved.x_corebox["harness"] == "scripted"  # type: ignore[attr-defined]
            assert len(model.requests) == 1
    finally:
        running.stop()
    assert KEY not in running.log.read_text(encoding="utf-8", errors="replace")
