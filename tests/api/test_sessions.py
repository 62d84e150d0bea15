"""Session listing with filters, updates and deletion."""

from __future__ import annotations

import openai
import pytest
from openai import OpenAI

from tests.api.support import Surface


def _session(client: OpenAI, text: str = "x", **kwargs: object) -> str:
    events = list(
        client.beta.agents.sessions.create(
            environment={"type": "none"}, input=text, stream=True, **kwargs
        )
    )  # type: ignore[arg-type]
    return str(events[0].session.id)  # type: ignore[attr-defined]


def test_list_filters_by_agent_and_metadata_and_pages_both_ways(client: OpenAI) -> None:
    agent = client.beta.agents.create(model="scripted", name="lister")
    ids = [
        _session(client, agent_id=agent.id, metadata={"batch": "b1", "n": str(i)}) for i in range(3)
    ]
    _session(client, agent={"model": "scripted"}, metadata={"batch": "other"})
    for order in ("asc", "desc"):
        for limit in (1, 2):
            seen = [
                s.id
                for s in client.beta.agents.sessions.list(
                    agent_id=agent.id, limit=limit, order=order
                )
            ]
            assert sorted(seen) == sorted(ids) and len(seen) == 3
    tagged = client.beta.agents.sessions.list(metadata={"batch": "b1", "n": "1"}).data
    assert [s.id for s in tagged] == [ids[1]]


def test_update_changes_metadata_and_agent_for_later_turns(client: OpenAI) -> None:
    session_id = _session(client, agent={"model": "scripted"})
    updated = client.beta.agents.sessions.update(
        session_id, metadata={"k": "v"}, agent={"service_tier": "flex"}
    )
    assert updated.metadata == {"k": "v"}
    assert updated.agent.service_tier == "flex"
    with pytest.raises(openai.BadRequestError):
        client.beta.agents.sessions.update(session_id)


def test_delete_only_when_idle(client: OpenAI) -> None:
    session_id = _session(client, agent={"model": "scripted"})
    with client.beta.agents.sessions.events.stream(session_id) as live:
        client.beta.agents.sessions.events.create(
            session_id,
            events=[
                {
                    "type": "agent.session.input.message",
                    "input": [
                        {"role": "user", "content": [{"type": "input_text", "text": "/hang"}]}
                    ],
                }
            ],
        )
        for event in live:
            if event.type == "agent.session.turn.in_progress":
                break
        with pytest.raises(openai.ConflictError):
            client.beta.agents.sessions.delete(session_id)
        client.beta.agents.sessions.events.create(
            session_id, events=[{"type": "agent.session.input.cancel"}]
        )
        for event in live:
            if event.type == "agent.session.idle":
                break
    deleted = client.beta.agents.sessions.delete(session_id)
    assert deleted.deleted is True
    with pytest.raises(openai.NotFoundError):
        client.beta.agents.sessions.retrieve(session_id)


def test_a_session_cannot_reference_another_projects_vault(surface: Surface) -> None:
    owner = surface.new_client("vault-owner")
    other = surface.new_client("vault-other")
    vault = owner.beta.agents.vaults.create(name="mine")
    with pytest.raises(openai.NotFoundError) as caught:
        other.beta.agents.sessions.create(
            agent={"model": "scripted"},
            environment={"type": "none"},
            input="x",
            vault_ids=[vault.id],
        )
    assert caught.value.param == "vault_ids[0]"
    session = owner.beta.agents.sessions.create(
        agent={"model": "scripted"}, environment={"type": "none"}, input="x", vault_ids=[vault.id]
    )
    assert session.vault_ids == [vault.id]


def test_a_session_was_last_active_when_its_turn_ended(client: OpenAI) -> None:
    """`last_active_at` is when the session was last active (the SDK's words): a turn
    that runs on after its input moves it, up to the turn's end."""
    session_id = _session(client, "/sleep 2100\n/say done", agent={"model": "scripted"})
    session = client.beta.agents.sessions.retrieve(session_id)
    turn = client.beta.agents.sessions.turns.list(session_id).data[0]
    assert turn.status == "completed" and turn.completed_at is not None
    assert turn.completed_at > session.created_at
    assert session.last_active_at >= turn.completed_at
    listed = [s for s in client.beta.agents.sessions.list(limit=100) if s.id == session_id]
    assert listed[0].last_active_at == session.last_active_at
