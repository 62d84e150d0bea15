"""Subagents through the official SDK (strict validation): the scripted harness's
`/subagent` directive opens one, and `sessions.subagents.*` read its real data."""

from __future__ import annotations

from typing import Any

import openai
import pytest
from openai import OpenAI

from tests.api.support import Surface, until


def run(client: OpenAI, text: str, *, enabled: bool = True) -> tuple[str, list[Any]]:
    events = list(
        client.beta.agents.sessions.create(
            agent={"model": "scripted", "multi_agent": {"enabled": enabled}},
            environment={"type": "none"},
            input=text,
            stream=True,
        )
    )
    return str(events[0].session.id), events


def test_a_scripted_subagent_has_turns_and_items(surface: Surface) -> None:
    client = surface.new_client("subagents")
    session_id, events = run(
        client, "/subagent count the apples\n/subagent sort the pears\n/say {subagent}"
    )
    assert events[-2].type == "agent.session.turn.completed", [e.type for e in events]
    assert events[-2].turn.subagent_id is None  # the root turn
    text = "".join(e.delta for e in events if e.type == "agent.session.turn.output_text.delta")
    assert text == "sort the pears"
    lifecycle = [e.type for e in events if e.type.startswith("agent.session.subagent.")]
    assert (
        lifecycle
        == [
            "agent.session.subagent.created",
            "agent.session.subagent.active",
            "agent.session.subagent.closed",
        ]
        * 2
    )

    session = client.beta.agents.sessions.retrieve(session_id)
    listed = client.beta.agents.sessions.subagents.list(session_id, order="asc").data
    assert [s.name for s in listed] == ["subagent-1", "subagent-2"]
    first = listed[0]
    assert first.object == "agent.session.subagent" and first.session_id == session_id
    assert first.parent_agent_id == session.agent.id
    assert first.status == "closed" and first.closed_at is not None
    assert [c.model_dump() for c in first.instructions or []] == [
        {"type": "output_text", "text": "count the apples"}
    ]
    retrieved = client.beta.agents.sessions.subagents.retrieve(first.id, session_id=session_id)
    assert retrieved == first

    turns = client.beta.agents.sessions.subagents.turns.list(first.id, session_id=session_id)
    assert len(turns.data) == 1
    turn = turns.data[0]
    assert (turn.status, turn.subagent_id, turn.agent_id) == ("completed", first.id, first.id)
    assert turn.completed_at is not None
    again = client.beta.agents.sessions.subagents.turns.retrieve(
        turn.id, session_id=session_id, subagent_id=first.id
    )
    assert again == turn
    items = client.beta.agents.sessions.subagents.turns.items.list(
        turn.id, session_id=session_id, subagent_id=first.id, order="asc"
    ).data
    assert [(i.type, i.role, i.content[0].text) for i in items] == [  # type: ignore[union-attr]
        ("message", "user", "count the apples"),
        ("message", "assistant", "count the apples"),
    ]
    all_items = client.beta.agents.sessions.subagents.items.list(
        first.id, session_id=session_id, order="asc"
    ).data
    assert [i.id for i in all_items] == [i.id for i in items]

    # The root turn shows each subagent it opened: `agent_id` is the agent that asked
    # for it (the SDK's meaning), `x_corebox.subagent_id` the subagent itself.
    root_items = client.beta.agents.sessions.items.list(session_id, order="asc").data
    calls = [i for i in root_items if i.type == "create_subagent_call"]
    assert [c.agent_id for c in calls] == [session.agent.id] * 2  # type: ignore[union-attr]
    assert [c.x_corebox["subagent_id"] for c in calls] == [s.id for s in listed]  # type: ignore[union-attr]
    assert calls[0].content[0].text == "count the apples"  # type: ignore[union-attr]
    root_turn = client.beta.agents.sessions.turns.list(session_id).data[0]
    assert calls[0].agent_id == root_turn.agent_id == first.parent_agent_id  # type: ignore[union-attr]

    # The SDK's helpers follow the root turn and are not ended by a subagent's turn.
    with client.beta.agents.sessions.stream(session_id, input="/subagent peel\n/say done") as live:
        final = live.get_final_result()
    assert (final.output_text, final.turn.subagent_id) == ("done", None)
    listed = client.beta.agents.sessions.subagents.list(session_id, order="asc").data
    # Names are the session's: the second turn's subagent is the third.
    assert [s.name for s in listed] == ["subagent-1", "subagent-2", "subagent-3"]


def command(client: OpenAI, surface: Surface, session_id: str, action: str) -> Any:
    """Send a control command and return it once it left `accepted`."""
    base = surface.server.base_url
    sent: Any = client.post(
        f"{base}/x/v1/sessions/{session_id}/commands", cast_to=object, body={"action": action}
    )

    def settled() -> Any:
        row: Any = client.get(f"{base}/x/v1/commands/{sent['id']}", cast_to=object)
        return row if row["status"] != "accepted" else None

    return until(settled, 60.0)


def test_subagent_names_stay_unique_across_a_pause_and_resume(
    client: OpenAI, surface: Surface
) -> None:
    """The resumed Run is a new worker playing from the checkpoint; the subagent it
    opens still gets the session's next name."""
    stream = client.beta.agents.sessions.create(
        agent={"model": "scripted", "multi_agent": {"enabled": True}},
        environment={"type": "none"},
        input="/subagent one\n/sleep 1500\n/subagent two\n/say {subagent}",
        stream=True,
    )
    session_id = ""
    for event in stream:
        if event.type == "agent.session.created":
            session_id = event.session.id
        if event.type == "agent.session.subagent.closed":
            break
    stream.close()
    assert command(client, surface, session_id, "pause")["status"] == "applied"
    assert command(client, surface, session_id, "resume")["status"] == "applied"
    sessions = client.beta.agents.sessions
    until(lambda: sessions.turns.list(session_id).data[0].status == "completed", 60.0)
    listed = sessions.subagents.list(session_id, order="asc").data
    assert [s.name for s in listed] == ["subagent-1", "subagent-2"]


def test_subagents_are_refused_without_multi_agent(client: OpenAI) -> None:
    session_id, events = run(client, "/subagent hello", enabled=False)
    assert events[-2].type == "agent.session.turn.failed", [e.type for e in events]
    assert client.beta.agents.sessions.subagents.list(session_id).data == []


def test_a_missing_subagent_is_404(client: OpenAI) -> None:
    session_id, _ = run(client, "hi")
    with pytest.raises(openai.NotFoundError):
        client.beta.agents.sessions.subagents.retrieve("subagent_x", session_id=session_id)
    with pytest.raises(openai.NotFoundError):
        client.beta.agents.sessions.subagents.turns.list("subagent_x", session_id=session_id)
