"""Official SDK clients for tests, each closed at its test's teardown.

A client that is left to the garbage collector closes its pooled sockets in whatever
order a collection finalises them, which can report an unclosed socket inside a later,
unrelated test; `sdk_client` records each client and `tests/conftest.py` closes them
when the test that opened them ends. `send_and_settle` sends one message and follows
the session until it is idle again."""

from __future__ import annotations

from typing import Any

from openai import OpenAI

_opened: list[OpenAI] = []


def sdk_client(**options: Any) -> OpenAI:
    """`OpenAI(**options)`, closed when the current test ends."""
    client = OpenAI(**options)
    _opened.append(client)
    return client


def close_opened() -> None:
    while _opened:
        _opened.pop().close()


def send_and_settle(client: OpenAI, session_id: str, text: str) -> Any:
    """Send one message, follow the session's events until it is idle again and return
    its latest turn."""
    with client.beta.agents.sessions.events.stream(session_id) as live:
        client.beta.agents.sessions.events.create(
            session_id,
            events=[
                {
                    "type": "agent.session.input.message",
                    "input": [{"role": "user", "content": [{"type": "input_text", "text": text}]}],
                }
            ],
        )
        for event in live:
            if event.type == "agent.session.idle":
                return client.beta.agents.sessions.turns.list(session_id, limit=1).data[0]
    raise AssertionError("the stream ended before the session was idle")
