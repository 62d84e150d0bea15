"""Saved agents through the official SDK: exact tool shapes, update semantics, lists,
deletion and the route order that keeps `/v1/agents/<word>` routes reachable."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import openai
import pytest

from tests.api.support import Surface, http, surface

__all__ = ["surface"]
T = TypeVar("T")
RACERS = 12

FUNCTION = {
    "type": "function",
    "name": "get_weather",
    "description": "Weather for a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
}
EVERY_TOOL: list[dict[str, Any]] = [
    FUNCTION,
    {**FUNCTION, "name": "later", "defer_loading": True, "async": True},
    {"type": "tool_search"},
    {"type": "programmatic_tool_calling"},
    {"type": "programmatic_tool_calling", "enabled": False},
    {
        "type": "mcp",
        "server_label": "docs",
        "transport": {"type": "http", "server_url": "https://mcp.example/sse"},
    },
    {
        "type": "mcp",
        "server_label": "local",
        "transport": {"type": "stdio", "command": "srv", "cwd": "/tmp", "args": ["-v"]},
        "allowed_tools": ["read"],
        "connection_origin": "environment",
        "request_metadata": {"team": "a"},
        "required": True,
    },
    {"type": "web_search"},
    {
        "type": "web_search",
        "allowed_domains": ["example.com"],
        "context_size": "high",
        "location": {"city": "Paris"},
        "mode": "cached",
    },
    {"type": "computer_use"},
    {"type": "automations"},
]
EXPECTED_TOOLS: list[dict[str, Any]] = [
    {**FUNCTION, "defer_loading": False},
    {**FUNCTION, "name": "later", "defer_loading": True, "async": True},
    {"type": "tool_search"},
    {"type": "programmatic_tool_calling", "enabled": True},
    {"type": "programmatic_tool_calling", "enabled": False},
    {
        "type": "mcp",
        "server_label": "docs",
        "transport": {"type": "http", "server_url": "https://mcp.example/sse", "headers": {}},
        "allowed_tools": None,
        "connection_origin": "service",
        "credential_id": None,
        "request_metadata": {},
        "required": False,
    },
    {
        "type": "mcp",
        "server_label": "local",
        "transport": {
            "type": "stdio",
            "command": "srv",
            "cwd": "/tmp",
            "args": ["-v"],
            "env_vars": [],
        },
        "allowed_tools": ["read"],
        "connection_origin": "environment",
        "credential_id": None,
        "request_metadata": {"team": "a"},
        "required": True,
    },
    {
        "type": "web_search",
        "allowed_domains": None,
        "context_size": "medium",
        "location": None,
        "mode": "live",
    },
    {
        "type": "web_search",
        "allowed_domains": ["example.com"],
        "context_size": "high",
        "location": {"city": "Paris", "country": None, "region": None, "timezone": None},
        "mode": "cached",
    },
    {"type": "computer_use", "include_screenshots": False},
    {"type": "automations"},
]


def test_every_tool_type_is_stored_and_returned_with_its_exact_shape(surface: Surface) -> None:
    client = surface.new_client()
    raw = client.beta.agents.with_raw_response.create(model="scripted", tools=EVERY_TOOL)
    created = raw.http_response.json()
    assert created["tools"] == EXPECTED_TOOLS
    assert raw.parse().id == created["id"]
    fetched = client.beta.agents.with_raw_response.retrieve(created["id"]).http_response.json()
    assert fetched == created
    assert created["object"] == "agent"
    assert created["multi_agent"] == {"enabled": False, "max_concurrent_subagents": None}
    assert created["compaction"] == {"async": True}
    assert created["text"] == {"format": {"type": "text"}, "verbosity": "medium"}
    assert created["service_tier"] == "auto"
    assert created["metadata"] == {} and created["name"] is None


@pytest.mark.parametrize(
    ("tool", "param"),
    [
        ({"type": "laser"}, "tools[0]"),
        ({"type": "function", "name": "f", "parameters": {}}, "tools[0]"),
        (
            {
                "type": "mcp",
                "server_label": "x",
                "transport": {"type": "http", "server_url": "u", "authorization": "Bearer s"},
            },
            "tools[0].transport",
        ),
        ({"type": "web_search", "mode": "sometimes"}, "tools[0].mode"),
    ],
)
def test_invalid_tools_are_rejected_naming_the_field(
    surface: Surface, tool: dict[str, Any], param: str
) -> None:
    client = surface.new_client()
    with pytest.raises(openai.BadRequestError) as caught:
        client.beta.agents.create(model="scripted", tools=[tool])  # type: ignore[list-item]
    assert caught.value.param is not None and caught.value.param.startswith(param)
    assert client.beta.agents.list().data == []


def test_update_keeps_omitted_fields_clears_nulls_and_merges_experimental(
    surface: Surface,
) -> None:
    client = surface.new_client()
    agent = client.beta.agents.create(
        model="scripted",
        name="first",
        instructions="be brief",
        metadata={"a": "1", "b": "2"},
        tools=[FUNCTION],  # type: ignore[list-item]
        reasoning={"effort": "low"},
        experimental={"time_awareness": True},
    )
    same = client.beta.agents.update(agent.id)
    assert same.name == "first" and same.instructions == "be brief" and len(same.tools) == 1
    assert same.updated_at >= agent.updated_at

    changed = client.beta.agents.update(agent.id, metadata={"c": "3"}, name=None, experimental={})
    assert changed.metadata == {"c": "3"}
    assert changed.name is None
    assert changed.instructions == "be brief"
    assert changed.experimental is not None and changed.experimental.time_awareness is True
    assert changed.reasoning.effort == "low"

    cleared = client.beta.agents.update(
        agent.id,
        tools=None,
        metadata=None,
        reasoning=None,
        instructions=None,
        multi_agent={"enabled": True},
        model="other-model",
    )
    assert cleared.tools == [] and cleared.metadata == {}
    assert cleared.reasoning.effort is None and cleared.instructions is None
    assert cleared.multi_agent.enabled is True
    assert cleared.multi_agent.max_concurrent_subagents == 6
    assert cleared.model == "other-model"
    assert client.beta.agents.retrieve(agent.id).model_dump() == cleared.model_dump()

    replaced = client.beta.agents.update(agent.id, tools=[{"type": "computer_use"}])
    assert [t.type for t in replaced.tools] == ["computer_use"]
    assert client.beta.agents.update(agent.id, metadata={}).metadata == {}


def test_list_pages_through_every_agent_once_in_both_orders(surface: Surface) -> None:
    client = surface.new_client()
    made = [client.beta.agents.create(model="scripted", name=f"a{i}").id for i in range(5)]
    for limit in (1, 2):
        ascending = [a.id for a in client.beta.agents.list(limit=limit, order="asc")]
        descending = [a.id for a in client.beta.agents.list(limit=limit, order="desc")]
        assert ascending == made
        assert descending == made[::-1]
    first = client.beta.agents.list(limit=2, order="asc")
    assert first.has_more is True and first.first_id == made[0] and first.last_id == made[1]
    with pytest.raises(openai.NotFoundError):
        client.beta.agents.list(after="agent_missing")


def test_delete_returns_the_deleted_object_and_the_agent_is_gone(surface: Surface) -> None:
    client = surface.new_client()
    agent = client.beta.agents.create(model="scripted")
    deleted = client.beta.agents.delete(agent.id)
    assert (deleted.id, deleted.object, deleted.deleted) == (agent.id, "agent.deleted", True)
    with pytest.raises(openai.NotFoundError):
        client.beta.agents.retrieve(agent.id)
    with pytest.raises(openai.NotFoundError):
        client.beta.agents.update(agent.id, name="x")
    with pytest.raises(openai.NotFoundError):
        client.beta.agents.delete(agent.id)
    assert client.beta.agents.list().data == []


def test_saved_agent_still_starts_sessions(surface: Surface) -> None:
    client = surface.new_client()
    agent = client.beta.agents.create(model="scripted", instructions="hi", tools=[FUNCTION])  # type: ignore[list-item]
    events = list(
        client.beta.agents.sessions.create(
            agent_id=agent.id, environment={"type": "none"}, input="hello", stream=True
        )
    )
    session = events[0].session  # type: ignore[union-attr]
    assert session.agent.id == agent.id
    assert session.agent.tools[0].type == "function"


def test_agent_routes_do_not_shadow_other_agents_routes(surface: Surface) -> None:
    _, key = surface.project()
    headers = {"Authorization": f"Bearer {key}", "OpenAI-Beta": "agents=v1"}
    base = surface.server.base_url
    for path, kind in (
        ("/v1/agents/automations", "list"),
        ("/v1/agents/environments/templates", "list"),
    ):
        status, body, _ = http(base, "GET", path, headers=headers)
        assert status == 200 and body["object"] == kind, (path, body)


def test_mcp_credential_must_belong_to_the_project(surface: Surface) -> None:
    owner = surface.new_client("owner")
    stranger = surface.new_client("stranger")
    vault = owner.beta.agents.vaults.create(name="v")
    credential = owner.beta.agents.vaults.credentials.create(
        vault.id,
        name="docs",
        auth={"type": "static_bearer", "token": "tok-1", "mcp_server_url": "https://mcp.example"},
    )
    tool = {
        "type": "mcp",
        "server_label": "docs",
        "transport": {"type": "http", "server_url": "https://mcp.example"},
        "credential_id": credential.id,
    }
    agent = owner.beta.agents.create(model="scripted", tools=[tool])  # type: ignore[list-item]
    assert agent.tools[0].credential_id == credential.id  # type: ignore[union-attr]
    with pytest.raises(openai.NotFoundError) as caught:
        stranger.beta.agents.create(model="scripted", tools=[tool])  # type: ignore[list-item]
    assert caught.value.param == "tools[0].credential_id"


def together(count: int, call: Callable[[int], T]) -> list[T | Exception]:
    """`call(0)` .. `call(count - 1)` on threads of their own, released at once; each
    result, or the exception it raised."""
    start = threading.Barrier(count)

    def run(index: int) -> T | Exception:
        start.wait()
        try:
            return call(index)
        except Exception as exc:
            return exc

    with ThreadPoolExecutor(count) as pool:
        return list(pool.map(run, range(count)))


def test_updates_at_once_without_an_expected_version_each_write_a_version(
    surface: Surface,
) -> None:
    client = surface.new_client("racers")
    agent = client.beta.agents.create(model="scripted", instructions="start")
    results = together(
        RACERS, lambda i: client.beta.agents.update(agent.id, instructions=f"sdk{i}")
    )
    assert not [r for r in results if isinstance(r, Exception)], results
    versions = sorted(r.x_corebox["version"] for r in results)  # type: ignore[union-attr]
    assert versions == list(range(2, RACERS + 2))
    status, page, _ = x_get(surface, client, f"/x/v1/agents/{agent.id}/versions?limit=100")
    assert status == 200, page
    written = {v["agent"]["instructions"] for v in page["data"]}
    assert written == {"start"} | {f"sdk{i}" for i in range(RACERS)}
    status, pointers, _ = x_get(surface, client, f"/x/v1/agents/{agent.id}/deployments")
    assert [(d["name"], d["version"]) for d in pointers["data"]] == [("latest", RACERS + 1)]


def test_updates_at_once_expecting_one_version_have_one_winner(surface: Surface) -> None:
    client = surface.new_client("expecters")
    agent = client.beta.agents.create(model="scripted", instructions="start")
    results = together(
        RACERS,
        lambda i: client.beta.agents.update(
            agent.id, instructions=f"sdk{i}", extra_body={"x_corebox": {"expected_version": 1}}
        ),
    )
    refused = [r for r in results if isinstance(r, Exception)]
    assert len(refused) == RACERS - 1, results
    assert all(isinstance(r, openai.ConflictError) for r in refused), refused
    assert {r.code for r in refused} == {"stale_agent_version"}  # type: ignore[attr-defined]
    assert client.beta.agents.retrieve(agent.id).x_corebox == {"version": 2}  # type: ignore[attr-defined]


def x_get(surface: Surface, client: openai.OpenAI, path: str) -> tuple[int, Any, Any]:
    headers = {"Authorization": f"Bearer {client.api_key}"}
    return http(surface.server.base_url, "GET", path, headers=headers)
