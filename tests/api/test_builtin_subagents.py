"""`builtin` with `multi_agent` enabled: the model delegates through the
`create_subagent` tool; the subagent runs its own model call and its turn and items are
readable through `sessions.subagents.*` (real `corebox serve`, loopback model server)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from openai import OpenAI

from tests.api.test_builtin import create, latest_turn
from tests.support.model_server import ModelServer, Reply


@pytest.fixture
def model() -> Iterator[ModelServer]:
    with ModelServer().running() as server:
        yield server


def tool_names(body: dict[str, object]) -> list[str]:
    return [t["function"]["name"] for t in body.get("tools") or []]  # type: ignore[attr-defined,index]


def test_builtin_delegates_to_a_subagent(client: OpenAI, model: ModelServer) -> None:
    model.queue(
        Reply.call("create_subagent", {"task": "Count the vowels in banana.", "name": "counter"}),
        Reply.say("Three."),
        Reply.say("The subagent says three."),
    )
    session_id, _ = create(
        client,
        model,
        "how many vowels in banana?",
        agent={"instructions": "Be exact.", "multi_agent": {"enabled": True}},
    )
    assert latest_turn(client, session_id).status == "completed"
    root, sub, final = (seen.body for seen in model.requests)
    assert "create_subagent" in tool_names(root)
    assert tool_names(sub) == []
    assert sub["messages"] == [  # type: ignore[comparison-overlap]
        {"role": "system", "content": "Be exact."},
        {"role": "user", "content": "Count the vowels in banana."},
    ]
    assert final["messages"][-1]["content"] == "Three."  # type: ignore[index]

    subagents = client.beta.agents.sessions.subagents.list(session_id).data
    assert [(s.name, s.status) for s in subagents] == [("counter", "closed")]
    turns = client.beta.agents.sessions.subagents.turns.list(
        subagents[0].id, session_id=session_id
    ).data
    assert [t.status for t in turns] == ["completed"]
    items = client.beta.agents.sessions.subagents.items.list(
        subagents[0].id, session_id=session_id, order="asc"
    ).data
    assert [(i.role, i.content[0].text) for i in items] == [  # type: ignore[union-attr]
        ("user", "Count the vowels in banana."),
        ("assistant", "Three."),
    ]


def test_without_multi_agent_no_delegation_tool_is_offered(
    client: OpenAI, model: ModelServer
) -> None:
    model.queue(Reply.say("Hello."))
    session_id, _ = create(client, model, "hi")
    assert latest_turn(client, session_id).status == "completed"
    assert "create_subagent" not in tool_names(model.requests[0].body)


def test_a_failing_subagent_is_reported_and_the_root_turn_goes_on(
    client: OpenAI, model: ModelServer
) -> None:
    model.queue(
        Reply.call("create_subagent", {"task": "Do the impossible."}),
        Reply.fail(400, "invalid_request"),
        Reply.say("It could not be done."),
    )
    session_id, _ = create(client, model, "try it", agent={"multi_agent": {"enabled": True}})
    assert latest_turn(client, session_id).status == "completed"
    told = model.requests[2].body["messages"][-1]["content"]
    assert told.startswith("error: the subagent failed")
    (subagent,) = client.beta.agents.sessions.subagents.list(session_id).data
    assert (subagent.name, subagent.status) == ("subagent-1", "closed")
    turns = client.beta.agents.sessions.subagents.turns.list(subagent.id, session_id=session_id)
    assert [(t.status, t.error is not None) for t in turns.data] == [("failed", True)]


def test_subagent_names_are_unique_in_the_session_and_calls_name_the_asking_agent(
    client: OpenAI, model: ModelServer
) -> None:
    model.queue(
        Reply.call("create_subagent", {"task": "Count the a's.", "name": "counter"}),
        Reply.say("Three."),
        Reply.call("create_subagent", {"task": "Count the n's.", "name": "counter"}),
        Reply.say("Two."),
        Reply.call("create_subagent", {"task": "Count the b's."}),
        Reply.say("One."),
        Reply.say("Done."),
    )
    session_id, _ = create(client, model, "count", agent={"multi_agent": {"enabled": True}})
    assert latest_turn(client, session_id).status == "completed"
    sessions = client.beta.agents.sessions
    listed = sessions.subagents.list(session_id, order="asc").data
    assert [s.name for s in listed] == ["counter", "counter-2", "subagent-3"]
    calls = [
        i
        for i in sessions.items.list(session_id, order="asc").data
        if i.type == "create_subagent_call"
    ]
    asking = latest_turn(client, session_id).agent_id
    assert [c.agent_id for c in calls] == [asking] * 3  # type: ignore[union-attr]
    assert [c.x_corebox["subagent_id"] for c in calls] == [s.id for s in listed]  # type: ignore[union-attr]
