"""Tool catalog integrity at admission: duplicate function names, duplicate MCP labels,
names the model APIs refuse and function parameters that are not an object schema are
400s naming the offending field, on agents, inline session agents and session updates,
and leave nothing behind."""

from __future__ import annotations

from typing import Any

import openai
import pytest
from openai import OpenAI

from tests.api.support import Surface, surface, unchanged

__all__ = ["surface"]


def function(name: str, parameters: Any = None) -> dict[str, Any]:
    return {
        "type": "function",
        "name": name,
        "description": "",
        "parameters": {"type": "object", "properties": {}} if parameters is None else parameters,
    }


def mcp(label: str) -> dict[str, Any]:
    return {
        "type": "mcp",
        "server_label": label,
        "transport": {"type": "http", "server_url": "http://127.0.0.1:9/mcp"},
    }


CASES = [
    ([function("lookup"), function("lookup")], "tools[1].name"),
    ([mcp("docs"), function("docs"), mcp("docs")], "tools[2].server_label"),
    ([function("bad name!")], "tools[0].name"),
    ([function("f", {"type": "string"})], "tools[0].parameters"),
    ([function("f", {"properties": {"a": {"type": "string"}}})], "tools[0].parameters"),
    ([function("f", {"type": "object", "properties": []})], "tools[0].parameters.properties"),
]


@pytest.mark.parametrize(("tools", "param"), CASES)
def test_an_agent_with_a_broken_catalog_is_refused(
    surface: Surface, client: OpenAI, tools: list[dict[str, Any]], param: str
) -> None:
    with unchanged(surface.server.data_dir), pytest.raises(openai.BadRequestError) as caught:
        client.beta.agents.create(model="scripted", tools=tools)  # type: ignore[arg-type]
    assert caught.value.param == param
    assert caught.value.status_code == 400


@pytest.mark.parametrize(("tools", "param"), CASES[:2])
def test_inline_agents_and_session_updates_are_checked_too(
    surface: Surface, client: OpenAI, tools: list[dict[str, Any]], param: str
) -> None:
    with unchanged(surface.server.data_dir), pytest.raises(openai.BadRequestError) as caught:
        client.beta.agents.sessions.create(
            agent={"model": "scripted", "tools": tools},  # type: ignore[typeddict-item]
            environment={"type": "none"},
            input="hi",
        )
    assert caught.value.param == f"agent.{param}"
    # Its turn is read to its end: one left running would write while the next case
    # checks that its rejected request wrote nothing.
    stream = client.beta.agents.sessions.create(
        agent={"model": "scripted"}, environment={"type": "none"}, input="hi", stream=True
    )
    with stream:
        events = list(stream)
    session = events[0].session  # type: ignore[union-attr]
    with pytest.raises(openai.BadRequestError) as caught:
        client.beta.agents.sessions.update(session.id, agent={"tools": tools})  # type: ignore[typeddict-item]
    assert caught.value.param == f"agent.{param}"


def test_distinct_names_and_an_empty_schema_are_accepted(client: OpenAI) -> None:
    tools = [function("a"), function("b", {}), mcp("a"), mcp("b")]
    agent = client.beta.agents.create(model="scripted", tools=tools)  # type: ignore[arg-type]
    assert [getattr(t, "name", None) or t.server_label for t in agent.tools] == ["a", "b", "a", "b"]  # type: ignore[union-attr]
