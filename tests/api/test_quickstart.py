"""Tier 4: the official SDK's quickstart against a real `corebox serve`."""

from __future__ import annotations

from openai import OpenAI


def create_streamed(client: OpenAI, text: str) -> tuple[str, list[object]]:
    events = list(
        client.beta.agents.sessions.create(
            agent={"model": "scripted"}, environment={"type": "none"}, input=text, stream=True
        )
    )
    created = events[0]
    assert created.type == "agent.session.created"
    return created.session.id, events  # type: ignore[attr-defined]


def test_create_stream_runs_a_turn_and_ends_at_idle(client: OpenAI) -> None:
    session_id, events = create_streamed(client, "hello")
    types = [e.type for e in events]  # type: ignore[attr-defined]
    assert types[:3] == [
        "agent.session.created",
        "agent.session.turn.created",
        "agent.session.in_progress",
    ]
    assert "agent.session.turn.in_progress" in types
    assert types[-2:] == ["agent.session.turn.completed", "agent.session.idle"]
    assert len({e.event_id for e in events}) == len(events)  # type: ignore[attr-defined]
    deltas = "".join(
        e.delta
        for e in events  # type: ignore[attr-defined]
        if e.type == "agent.session.turn.output_text.delta"
    )
    assert deltas == "hello"
    completed = next(e for e in events if e.type == "agent.session.turn.completed")  # type: ignore[attr-defined]
    assert completed.turn.status == "completed"  # type: ignore[attr-defined]
    assert events[-1].session.status == "idle"  # type: ignore[attr-defined]

    items = client.beta.agents.sessions.items.list(session_id, order="asc").data
    assert [(i.type, i.role) for i in items] == [("message", "user"), ("message", "assistant")]
    assert items[0].content[0].text == "hello"
    assert items[1].content[0].text == "hello"
    assert items[1].phase == "final_answer" and items[1].status == "completed"


def test_stream_helper_runs_a_second_turn_on_an_idle_session(client: OpenAI) -> None:
    session_id, _ = create_streamed(client, "hello")
    assert client.beta.agents.sessions.retrieve(session_id).status == "idle"
    with client.beta.agents.sessions.stream(session_id, input="again") as stream:
        result = stream.get_final_result()
    assert result.output_text == "again"
    assert result.turn.status == "completed"
    turns = client.beta.agents.sessions.turns.list(session_id, order="asc").data
    assert [t.status for t in turns] == ["completed", "completed"]
    again = client.beta.agents.sessions.turns.retrieve(turns[1].id, session_id=session_id)
    assert again.id == turns[1].id and again.subagent_id is None
    turn_items = client.beta.agents.sessions.turns.items.list(turns[1].id, session_id=session_id)
    assert [i.role for i in turn_items.data] == ["assistant", "user"]  # default order desc


def test_usage_is_a_replaced_snapshot_and_adds_up_on_the_session(client: OpenAI) -> None:
    session_id, events = create_streamed(client, "/usage 7 3\n/say done")
    completed = next(e for e in events if e.type == "agent.session.turn.completed")  # type: ignore[attr-defined]
    usage = completed.turn.usage  # type: ignore[attr-defined]
    assert (usage.input_tokens, usage.output_tokens, usage.total_tokens) == (7, 3, 10)
    session = client.beta.agents.sessions.retrieve(session_id)
    assert session.usage is not None and session.usage.total_tokens == 10


def test_say_directives_stream_commentary_then_a_final_answer(client: OpenAI) -> None:
    session_id, _ = create_streamed(client, "/say first\n/say second one")
    items = client.beta.agents.sessions.items.list(session_id, order="asc").data
    assistant = [i for i in items if i.role == "assistant"]
    assert [(i.content[0].text, i.phase) for i in assistant] == [
        ("first", "commentary"),
        ("second one", "final_answer"),
    ]


def test_fail_directive_fails_the_turn_and_leaves_the_session_idle(client: OpenAI) -> None:
    session_id, events = create_streamed(client, "/fail rate_limit_exceeded")
    types = [e.type for e in events]  # type: ignore[attr-defined]
    assert types[-2:] == ["agent.session.turn.failed", "agent.session.idle"]
    failed = events[-2]
    assert failed.turn.status == "failed"  # type: ignore[attr-defined]
    assert failed.turn.error.code == "rate_limit_exceeded"  # type: ignore[attr-defined]
    session = client.beta.agents.sessions.retrieve(session_id)
    assert session.status == "idle"
    # The failed turn does not poison the session: the SDK's helper runs the next turn.
    with client.beta.agents.sessions.stream(session_id, input="again") as stream:
        result = stream.get_final_result()
    assert result.turn.status == "completed"
    assert result.output_text == "again"
    assert client.beta.agents.sessions.turns.list(session_id).data[0].status == "completed"
    assert client.beta.agents.sessions.retrieve(session_id).status == "idle"
