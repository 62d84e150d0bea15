"""Agents as deployable artifacts through the official SDK and the `/x/v1` routes:
immutable versions, deployment pointers with promotion and rollback, session pins, and
the version and configuration digest every turn records."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from openai import OpenAI

from tests.api.support import Surface, http, surface
from tests.conftest import API_KEY
from tests.support.model_server import MODEL, ModelServer, Reply
from tests.support.sdk import send_and_settle

__all__ = ["surface"]


@pytest.fixture
def model() -> Iterator[ModelServer]:
    with ModelServer().running() as server:
        yield server


def x(surface: Surface, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    status, decoded, _ = http(
        surface.server.base_url, method, path, body, {"Authorization": f"Bearer {API_KEY}"}
    )
    return status, decoded


def key_id(surface: Surface) -> str:
    """The id of the default project's key (the actor its requests are audited as)."""
    status, projects = surface.core("GET", "/core/v1/projects?limit=100")
    assert status == 200
    for project in projects["data"]:
        status, keys = surface.core("GET", f"/core/v1/projects/{project['id']}/api_keys")
        for key in keys["data"]:
            if API_KEY.startswith(key["prefix"]) and key["revoked_at"] is None:
                return str(key["id"])
    raise AssertionError("no key found")


def saved_agent(client: OpenAI, model: ModelServer) -> str:
    """An agent on the loopback model, created then updated twice (versions 1-3)."""
    provider = {"protocol": "chat_completions", "base_url": model.base_url, "api_key": "sk-x"}
    agent = client.beta.agents.create(
        model=MODEL,
        instructions="prompt one",
        extra_body={"x_corebox": {"model_provider": provider}},
    )
    assert agent.x_corebox == {"version": 1}  # type: ignore[attr-defined]
    client.beta.agents.update(agent.id, instructions="prompt two")
    third = client.beta.agents.update(agent.id, instructions="prompt three")
    assert third.x_corebox == {"version": 3}  # type: ignore[attr-defined]
    return agent.id


def run_turn(client: OpenAI, **create: Any) -> Any:
    """A session's first turn, run to its end; (session, turn)."""
    events = list(
        client.beta.agents.sessions.create(
            environment={"type": "none"}, input="hi", stream=True, **create
        )
    )
    session_id = events[0].session.id
    turn = client.beta.agents.sessions.turns.list(session_id, limit=1).data[0]
    assert turn.status == "completed", turn
    return client.beta.agents.sessions.retrieve(session_id), turn


def system_prompt(model: ModelServer) -> str:
    messages = model.requests[-1].body["messages"]
    assert messages[0]["role"] == "system"
    return str(messages[0]["content"])


def test_versions_pins_promotion_and_rollback(
    surface: Surface, client: OpenAI, model: ModelServer
) -> None:
    agent_id = saved_agent(client, model)
    status, page = x(surface, "GET", f"/x/v1/agents/{agent_id}/versions?order=asc")
    assert status == 200, page
    assert [v["version"] for v in page["data"]] == [1, 2, 3]
    assert len({v["config_digest"] for v in page["data"]}) == 3
    assert page["data"][1]["agent"]["instructions"] == "prompt two"
    status, second = x(surface, "GET", f"/x/v1/agents/{agent_id}/versions/2")
    assert (status, second["config_digest"]) == (200, page["data"][1]["config_digest"])

    model.queue(Reply.say("two"))
    pinned, turn = run_turn(
        client, agent_id=agent_id, extra_body={"x_corebox": {"agent_version": 2}}
    )
    assert system_prompt(model) == "prompt two"
    assert pinned.x_corebox["agent_version"] == 2  # type: ignore[attr-defined]
    assert turn.x_corebox["agent_version"] == 2  # type: ignore[attr-defined]

    promote = f"/x/v1/agents/{agent_id}/deployments/production/promote"
    # A pointer that does not exist yet cannot have moved: the refusal says what it is.
    status, error = x(surface, "POST", promote, {"version": 3, "expected_pointer_version": 1})
    assert (status, error["error"]["code"]) == (409, "stale_pointer_version"), error
    assert error["error"]["message"] == (
        "Deployment 'production' does not exist yet, so no pointer version 1 can be expected;"
        " create it with an expected pointer version of 0 (or none)."
    )
    status, moved = x(surface, "POST", promote, {"version": 3})
    assert (status, moved["version"], moved["pointer_version"]) == (200, 3, 1)
    status, error = x(surface, "POST", promote, {"version": 2, "expected_pointer_version": 0})
    assert status == 409, error
    assert error["error"]["code"] == "stale_pointer_version"
    assert error["error"]["message"] == (
        "Deployment 'production' has moved since pointer version 0: it is at pointer"
        " version 1 (version 3)."
    )

    model.queue(Reply.say("production"))
    run_turn(client, agent_id=agent_id, extra_body={"x_corebox": {"deployment": "production"}})
    assert system_prompt(model) == "prompt three"

    rollback = f"/x/v1/agents/{agent_id}/deployments/latest/rollback"
    status, moved = x(surface, "POST", rollback, {"version": 1, "expected_pointer_version": 3})
    assert (status, moved["version"]) == (200, 1), moved
    model.queue(Reply.say("one"))
    _, turn = run_turn(client, agent_id=agent_id)
    assert system_prompt(model) == "prompt one"
    assert turn.x_corebox["agent_version"] == 1  # type: ignore[attr-defined]

    # The version-2 session keeps its pin whatever the pointers did.
    model.queue(Reply.say("still two"))
    send_and_settle(client, pinned.id, "again")
    assert system_prompt(model) == "prompt two"

    status, audit = x(surface, "GET", f"/x/v1/agents/{agent_id}/audit")
    moves = [
        (a["action"], a["deployment"], a["from_version"], a["to_version"]) for a in audit["data"]
    ]
    assert moves[:2] == [("rollback", "latest", 3, 1), ("promote", "production", None, 3)]
    assert {a["actor"] for a in audit["data"]} == {key_id(surface)}
    status, listed = x(surface, "GET", f"/x/v1/agents/{agent_id}/deployments")
    assert {(d["name"], d["version"]) for d in listed["data"]} == {
        ("latest", 1),
        ("production", 3),
    }


def test_a_stale_expected_version_is_refused(surface: Surface, client: OpenAI) -> None:
    agent = client.beta.agents.create(model="scripted", instructions="a")
    client.beta.agents.update(
        agent.id, instructions="b", extra_body={"x_corebox": {"expected_version": 1}}
    )
    with pytest.raises(Exception) as caught:
        client.beta.agents.update(
            agent.id, instructions="c", extra_body={"x_corebox": {"expected_version": 1}}
        )
    assert getattr(caught.value, "status_code", None) == 409
    assert client.beta.agents.retrieve(agent.id).instructions == "b"
    _, page = x(surface, "GET", f"/x/v1/agents/{agent.id}/versions")
    assert [v["version"] for v in page["data"]] == [2, 1]


def test_a_session_update_between_turns_changes_the_turn_digest(client: OpenAI) -> None:
    session, _ = run_turn(client, agent={"model": "scripted"})
    client.beta.agents.sessions.update(session.id, agent={"service_tier": "flex"})
    send_and_settle(client, session.id, "x")
    turns = client.beta.agents.sessions.turns.list(session.id, order="asc").data
    digests = [t.x_corebox["config_digest"] for t in turns]  # type: ignore[attr-defined]
    assert len(digests) == 2 and all(d.startswith("sha256:") for d in digests)
    assert digests[0] != digests[1]
    assert client.beta.agents.sessions.retrieve(session.id).x_corebox["config_revision"] == 2  # type: ignore[attr-defined]
