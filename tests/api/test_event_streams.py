"""Session event streams through the official SDK: a deleted session's stream ends,
events carry obfuscation padding unless turned off, and a turn's events come in the
hosted service's order."""

from __future__ import annotations

from typing import Any

from openai import OpenAI

from tests.api.test_turns import idle_session, message, send


def test_following_a_deleted_session_ends_promptly(client: OpenAI) -> None:
    session_id = idle_session(client)
    # A bounded read: were the stream to stay open, the test fails instead of hanging.
    bounded = client.with_options(timeout=30)
    with bounded.beta.agents.sessions.events.stream(session_id) as live:
        deleted = client.beta.agents.sessions.delete(session_id)
        assert deleted.deleted
        rest = [event.type for event in live]
    assert rest == []  # the stream follows from now: it ends with nothing more to send


def test_events_carry_obfuscation_padding_unless_turned_off(client: OpenAI) -> None:
    padded = list(
        client.beta.agents.sessions.create(
            agent={"model": "scripted"}, environment={"type": "none"}, input="hi", stream=True
        )
    )
    paddings = [event.obfuscation for event in padded]
    assert all(p and p.isalnum() for p in paddings), paddings
    assert len(set(paddings)) > 1  # random, not a constant

    plain = list(
        client.beta.agents.sessions.create(
            agent={"model": "scripted"},
            environment={"type": "none"},
            input="hi",
            stream=True,
            stream_options={"include_obfuscation": False},
        )
    )
    assert [event.obfuscation for event in plain] == [None] * len(plain)

    session_id = padded[0].session.id  # type: ignore[union-attr]
    for include, padded_again in ((None, True), (False, False)):
        options: dict[str, Any] = {} if include is None else {"include_obfuscation": include}
        with client.beta.agents.sessions.events.stream(session_id, **options) as live:
            send(client, session_id, message("again"))
            event = next(iter(live))
        assert bool(event.obfuscation and event.obfuscation.isalnum()) is padded_again


def test_a_turn_starts_before_its_user_message_is_added(client: OpenAI) -> None:
    events = list(
        client.beta.agents.sessions.create(
            agent={"model": "scripted"}, environment={"type": "none"}, input="hi", stream=True
        )
    )
    types = [event.type for event in events]
    assert types[:5] == [
        "agent.session.created",
        "agent.session.turn.created",
        "agent.session.in_progress",
        "agent.session.turn.in_progress",
        "agent.session.turn.item.added",
    ]
    user = events[4].item  # type: ignore[union-attr]
    assert (user.type, user.role) == ("message", "user")
    assert types.count("agent.session.turn.item.added") == 2  # the user's, then the reply
    assert types[-2:] == ["agent.session.turn.completed", "agent.session.idle"]
