"""Session event streams through the official SDK: a deleted session's stream ends,
events carry obfuscation padding unless turned off, and a turn's events come in the
hosted service's order."""

from __future__ import annotations

from openai import OpenAI

from tests.api.test_turns import idle_session


def test_following_a_deleted_session_ends_promptly(client: OpenAI) -> None:
    session_id = idle_session(client)
    # A bounded read: were the stream to stay open, the test fails instead of hanging.
    bounded = client.with_options(timeout=30)
    with bounded.beta.agents.sessions.events.stream(session_id) as live:
        deleted = client.beta.agents.sessions.delete(session_id)
        assert deleted.deleted
        rest = [event.type for event in live]
    assert rest == []  # the stream follows from now: it ends with nothing more to send
