"""Streams as the official SDK reads them, table-driven over what a turn can do: every
event of `sessions.create(stream=True)` parses as the SDK's event type under strict
validation, and the stream keeps the invariants the SDK's helpers rely on."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from openai import OpenAI

from tests.api.test_turns import WEATHER_TOOL

TERMINAL = {
    "agent.session.turn.completed": "completed",
    "agent.session.turn.failed": "failed",
    "agent.session.turn.cancelled": "cancelled",
}

SCRIPTS: dict[str, tuple[str, dict[str, Any]]] = {
    "plain text": ("hello there", {}),
    "two messages": ("/say one\n/say two", {}),
    "reasoning": ("/think pondering\n/say done", {}),
    "command": ("/command ls -la", {}),
    "usage": ("/usage 10 20\n/say x", {}),
    "failure": ("/fail rate_limited", {}),
    "empty reply": ("/say", {}),
    "subagent": (
        "/subagent helper look it up\n/say ok",
        {"multi_agent": {"enabled": True}},
    ),
}


def _check(events: list[Any], *, subagents: bool = False) -> None:
    types = [event.type for event in events]
    assert types[0] == "agent.session.created" and types[-1] == "agent.session.idle", types
    session_id = events[0].session.id
    assert events[-1].session.status == "idle"
    ids = Counter(event.event_id for event in events)
    assert all(count == 1 for count in ids.values()), "event ids repeat"
    assert all(getattr(e, "session_id", session_id) == session_id for e in events)
    assert all(isinstance(e.obfuscation, str) and e.obfuscation for e in events)
    created = [e.turn for e in events if e.type == "agent.session.turn.created"]
    ended = {e.turn.id: e.turn.status for e in events if e.type in TERMINAL}
    for event in events:
        if event.type in TERMINAL:
            assert event.turn.status == TERMINAL[event.type]
    assert {turn.id for turn in created} == set(ended), "every turn ends once"
    roots = [turn for turn in created if turn.subagent_id is None]
    assert len(roots) == 1 and (len(created) > 1) == subagents
    root = roots[0].id
    started = types.index("agent.session.turn.in_progress")
    user = next(
        i
        for i, e in enumerate(events)
        if e.type == "agent.session.turn.item.added"
        and e.item.type == "message"
        and e.item.role == "user"
    )
    assert started < user, "the turn starts before its user message is added"
    for event in events:
        if event.type == "agent.session.turn.item.done":
            assert isinstance(event.output_index, int)
    assert ended[root] in ("completed", "failed")


@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_every_event_parses_and_the_stream_keeps_its_invariants(client: OpenAI, name: str) -> None:
    text, agent = SCRIPTS[name]
    stream = client.beta.agents.sessions.create(
        agent={"model": "scripted", **agent}, environment={"type": "none"}, input=text, stream=True
    )
    with stream:
        events = list(stream)
    _check(events, subagents=name == "subagent")


def test_a_function_call_stream_through_the_helpers_parses(client: OpenAI) -> None:
    """The helper path: `tool_handlers` answer the call, and the whole stream, with its
    `requires_action` and the result's `in_progress`, parses and keeps the invariants."""
    seen: list[Any] = []

    def weather(arguments: dict[str, Any]) -> str:
        return f"sunny in {arguments['city']}"

    stream = client.beta.agents.sessions.create(
        agent={"model": "scripted", "tools": [WEATHER_TOOL]},  # type: ignore[list-item]
        environment={"type": "none"},
        input='/call get_weather {"city": "Paris"}\n/say {result}',
        stream=True,
        tool_handlers={"get_weather": weather},
    )
    with stream:
        for event in stream:
            seen.append(event)
    _check(seen)
    types = [event.type for event in seen]
    waiting = types.index("agent.session.requires_action")
    assert "agent.session.in_progress" in types[waiting:]
    final = [
        e.item
        for e in seen
        if e.type == "agent.session.turn.item.done" and e.item.type == "message"
    ]
    assert final[-1].content[0].text == "sunny in Paris"
