"""Vault credentials in use, through the official SDK and the builtin harness: an MCP
tool without `credential_id` authenticates with the one credential of the session's
vaults that matches its URL; an `environment_variable` credential reaches the commands
a turn runs, and never the items, the journal or the log."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from openai import OpenAI

from tests.api.support import Surface
from tests.api.test_builtin import latest_turn, message, provider, send, until_settled
from tests.support.mcp_server import TOKEN, McpTestServer
from tests.support.model_server import MODEL, ModelServer, Reply

SECRET = "svc-secret-7f3a9c41d2"


@pytest.fixture
def model() -> Iterator[ModelServer]:
    with ModelServer().running() as server:
        yield server


def _mcp_tool(url: str) -> dict[str, Any]:
    return {"type": "mcp", "server_label": "calc", "transport": {"type": "http", "server_url": url}}


def test_an_mcp_tool_without_credential_id_uses_the_one_matching_credential(
    surface: Surface, model: ModelServer
) -> None:
    client = surface.new_client("mcp-match")
    with McpTestServer().running() as tools:
        vault = client.beta.agents.vaults.create(name="tools")
        client.beta.agents.vaults.credentials.create(
            vault.id,
            name="other",
            auth={
                "type": "static_bearer",
                "mcp_server_url": "https://other.example/mcp",
                "token": "x",
            },
        )
        client.beta.agents.vaults.credentials.create(
            vault.id,
            name="calc",
            # The same server, written with a trailing slash.
            auth={"type": "static_bearer", "mcp_server_url": tools.url + "/", "token": TOKEN},
        )
        model.queue(Reply.call("calc__add", {"a": 40, "b": 2}), Reply.say("It is 42."))
        session_id, _ = _create(client, model, "40 + 2?", [_mcp_tool(tools.url)], [vault.id])
    assert tools.calls == [("add", {"a": 40, "b": 2})]
    assert tools.refused == 0
    assert latest_turn(client, session_id).status == "completed"


def test_several_matching_credentials_fail_the_turn_asking_for_credential_id(
    surface: Surface, model: ModelServer
) -> None:
    client = surface.new_client("mcp-ambiguous")
    with McpTestServer().running() as tools:
        vault = client.beta.agents.vaults.create(name="tools")
        for name in ("one", "two"):
            client.beta.agents.vaults.credentials.create(
                vault.id,
                name=name,
                auth={"type": "static_bearer", "mcp_server_url": tools.url, "token": TOKEN},
            )
        session_id, _ = _create(client, model, "hi", [_mcp_tool(tools.url)], [vault.id])
    turn = latest_turn(client, session_id)
    assert turn.status == "failed"
    assert "credential_id" in (turn.error.message if turn.error else "")
    assert tools.calls == []


def test_an_environment_variable_credential_reaches_commands_only(
    surface: Surface, client: OpenAI, model: ModelServer, tmp_path: Path
) -> None:
    vault = client.beta.agents.vaults.create(name="service")
    client.beta.agents.vaults.credentials.create(
        vault.id,
        name="service",
        auth={
            "type": "environment_variable",
            "secret_name": "SERVICE_API_KEY",
            "secret_value": SECRET,
            "networking": {"type": "limited", "allowed_hosts": ["api.example.com"]},
        },
    )
    workspace = tmp_path / "ws"
    workspace.mkdir()
    model.queue(Reply.say("Ready."))
    environment = {"type": "self_hosted", "workspace_directory": str(workspace)}
    session_id, _ = _create(client, model, "hello", [], [vault.id], environment)
    command = 'printf %s "$SERVICE_API_KEY" > key.txt; echo "key=$SERVICE_API_KEY"'
    model.queue(Reply.call("run_command", {"command": command}), Reply.say("Done."))
    with client.beta.agents.sessions.events.stream(session_id) as live:
        send(client, session_id, message("use the key"))
        for event in live:
            if event.type == "agent.session.requires_action":
                action = event.session.required_actions[0]
                break
        send(
            client,
            session_id,
            {
                "type": "agent.session.input.mcp_approval_request_result",
                "request_id": action.request_id,  # type: ignore[union-attr]
                "response": {"type": "mcp_tool_call", "decision": "approve"},
            },
        )
        until_settled(live)
    assert latest_turn(client, session_id).status == "completed"
    assert (workspace / "key.txt").read_text() == SECRET
    commands = [
        i
        for i in client.beta.agents.sessions.items.list(session_id).data
        if i.type == "command_execution"
    ]
    assert [c.output for c in commands] == ["key=[redacted]\n"]
    assert SECRET not in model.requests[-1].body["messages"][-1]["content"]
    # Nowhere in the data directory (database, journal, WAL) nor in the server's log.
    data_dir = surface.server.data_dir
    for path in [*data_dir.rglob("*"), surface.server.log]:
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), path


def test_an_environment_variable_credential_reaches_scripted_exec(
    client: OpenAI, tmp_path: Path
) -> None:
    vault = client.beta.agents.vaults.create(name="scripted-service")
    client.beta.agents.vaults.credentials.create(
        vault.id,
        name="service",
        auth={
            "type": "environment_variable",
            "secret_name": "SERVICE_TOKEN",
            "secret_value": SECRET,
            "networking": {"type": "unrestricted"},
        },
    )
    workspace = tmp_path / "ws"
    workspace.mkdir()
    events = list(
        client.beta.agents.sessions.create(
            agent={"model": "scripted"},
            environment={"type": "self_hosted", "workspace_directory": str(workspace)},
            input='/exec printf %s "$SERVICE_TOKEN" > token.txt; echo "t=$SERVICE_TOKEN"\n'
            "/say {output}",
            stream=True,
            vault_ids=[vault.id],
        )
    )
    assert events[-2].type == "agent.session.turn.completed", [e.type for e in events]
    assert (workspace / "token.txt").read_text() == SECRET
    session_id = events[0].session.id  # type: ignore[union-attr]
    items = client.beta.agents.sessions.items.list(session_id, order="asc").data
    assert [i.output for i in items if i.type == "command_execution"] == ["t=[redacted]\n"]
    assert items[-1].content[0].text == "t=[redacted]\n"  # type: ignore[union-attr]


def _create(
    client: OpenAI,
    model: ModelServer,
    text: str,
    tools: list[dict[str, Any]],
    vault_ids: list[str],
    environment: dict[str, Any] | None = None,
) -> tuple[str, list[Any]]:
    """A builtin session with `tools` and `vault_ids`, and the events of its first turn."""
    events = list(
        client.beta.agents.sessions.create(
            agent={"model": MODEL, "tools": tools},  # type: ignore[typeddict-item]
            environment=environment or {"type": "none"},  # type: ignore[arg-type]
            input=text,
            stream=True,
            vault_ids=vault_ids,
            extra_body={"x_corebox": {"model_provider": provider(model)}},
        )
    )
    return str(events[0].session.id), events
