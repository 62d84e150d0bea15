"""The run manifest each turn records (`turn.x_corebox.manifest`), checked against what
the loopback model server actually received."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from typing import Any

import pytest
from openai import OpenAI

from tests.support.mcp_server import TOKEN, McpTestServer
from tests.support.model_server import MODEL, ModelServer, Reply
from tests.support.sdk import send_and_settle

WEATHER = {
    "type": "function",
    "name": "get_weather",
    "description": "Weather for a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
}


@pytest.fixture
def model() -> Iterator[ModelServer]:
    with ModelServer().running() as server:
        yield server


def digest(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def test_the_manifest_matches_what_the_model_received(client: OpenAI, model: ModelServer) -> None:
    provider = {"protocol": "chat_completions", "base_url": model.base_url, "api_key": "sk-x"}
    model.queue(Reply.say("Hello."))
    events = list(
        client.beta.agents.sessions.create(
            agent={"model": MODEL, "instructions": "Be brief.", "tools": [WEATHER]},  # type: ignore[list-item]
            environment={"type": "none"},
            input="hi",
            stream=True,
            extra_body={"x_corebox": {"model_provider": provider}},
        )
    )
    session_id = events[0].session.id
    turn = client.beta.agents.sessions.turns.list(session_id, limit=1).data[0]
    manifest = turn.x_corebox["manifest"]  # type: ignore[attr-defined]
    received = model.requests[-1].body
    assert manifest["tools_digest"] == digest(received["tools"])
    assert manifest["system_prompt_digest"] == digest("Be brief.")
    assert received["messages"][0] == {"role": "system", "content": "Be brief."}
    assert (manifest["model"], manifest["protocol"]) == (MODEL, "chat_completions")
    assert manifest["stop_reason"] == "stop"
    assert manifest["tool_catalog_version"] == 1
    assert manifest["history_omitted"] == 0
    assert manifest["config_digest"] == turn.x_corebox["config_digest"]  # type: ignore[attr-defined]

    # The same tools again: same catalog version. Changed tools: the next version.
    model.queue(Reply.say("Again."))
    again = send_and_settle(client, session_id, "again").x_corebox["manifest"]
    assert again["tool_catalog_version"] == 1
    client.beta.agents.sessions.update(
        session_id,
        agent={"tools": [WEATHER, {**WEATHER, "name": "get_time"}]},  # type: ignore[list-item]
    )
    model.queue(Reply.say("More."))
    changed = send_and_settle(client, session_id, "more").x_corebox["manifest"]
    assert changed["tool_catalog_version"] == 2
    assert changed["tools_digest"] == digest(model.requests[-1].body["tools"])


def test_a_scripted_turn_records_cores_part(client: OpenAI) -> None:
    events = list(
        client.beta.agents.sessions.create(
            agent={"model": "scripted", "instructions": "x"},
            environment={"type": "none"},
            input="hi",
            stream=True,
        )
    )
    turn = client.beta.agents.sessions.turns.list(events[0].session.id, limit=1).data[0]
    manifest = turn.x_corebox["manifest"]  # type: ignore[attr-defined]
    assert manifest["harness"] == "scripted"
    assert manifest["system_prompt_digest"] == digest("x")
    assert manifest["policy"]["overlays"] == []


def test_a_server_that_dropped_out_answers_unavailable(client: OpenAI, model: ModelServer) -> None:
    provider = {"protocol": "chat_completions", "base_url": model.base_url, "api_key": "sk-x"}
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
        model.queue(Reply.say("Ready."))
        events = list(
            client.beta.agents.sessions.create(
                agent={"model": MODEL, "tools": [tool]},  # type: ignore[list-item]
                environment={"type": "none"},
                input="hi",
                stream=True,
                extra_body={"x_corebox": {"model_provider": provider}},
            )
        )
    session_id = events[0].session.id
    first = client.beta.agents.sessions.turns.list(session_id, limit=1).data[0]
    offered = [t["function"]["name"] for t in model.requests[-1].body["tools"]]
    assert "calc__add" in offered
    model.queue(Reply.call("calc__add", {"a": 1, "b": 2}), Reply.say("It is down."))
    second = send_and_settle(client, session_id, "1 + 2?")
    assert second.status == "completed"
    told = model.requests[-1].body["messages"][-1]
    assert told["role"] == "tool"
    assert json.loads(told["content"]) == {"error": "unavailable", "server": "calc", "tool": "add"}
    catalog = [t.x_corebox["manifest"]["tool_catalog_version"] for t in (first, second)]  # type: ignore[attr-defined]
    assert catalog == [1, 1]
