"""Steering messages never decide how a turn ends: one Core never delivered starts the
next turn, one whose delivery nobody can confirm is marked unknown on its own item and
in the turn's `x_corebox`, and the completed turn stays completed."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from openai import OpenAI

from tests.allinone.core.orchestration.hostile import (
    connected,
    create_streamed,
    in_thread,
    settled_after,
)


def _message(text: str) -> dict[str, Any]:
    return {
        "type": "agent.session.input.message",
        "input": [{"role": "user", "content": [{"type": "input_text", "text": text}]}],
    }


def _steer(client: OpenAI, session_id: str, text: str) -> None:
    client.beta.agents.sessions.events.create(session_id, events=[_message(text)])  # type: ignore[list-item]


def _session_of(client: OpenAI, run_id: str) -> str:
    for session in client.beta.agents.sessions.list():
        if client.beta.agents.sessions.turns.list(session.id).data[0].id == run_id:
            return session.id
    raise AssertionError("no session runs " + run_id)


def test_undelivered_steering_starts_the_next_turn_and_unknown_is_marked(
    tmp_path: Path,
) -> None:
    async def main() -> None:
        async with connected(tmp_path) as (peer, client):
            created = asyncio.create_task(in_thread(lambda: create_streamed(client, "first")))
            run_id = await peer.start_run()
            session_id = await in_thread(lambda: _session_of(client, run_id))
            # The first steering message is sent and never confirmed; the second waits
            # for its receipt, so Core never delivers it.
            await in_thread(lambda: _steer(client, session_id, "steer one"))
            steer = await peer.receive("prompt_steer")
            assert steer["payload"]["input"][0]["content"][0]["text"] == "steer one"
            await in_thread(lambda: _steer(client, session_id, "steer two"))
            await peer.message("m1", "answer one")
            await peer.send("done", run_id, {})
            events = await asyncio.wait_for(created, 20)
            types = [e.type for e in events]
            assert types[-2:] == ["agent.session.turn.completed", "agent.session.idle"]
            assert events[-2].turn.x_corebox["unknown_inputs"] == 1

            async def next_turn() -> None:
                await peer.play_turn("answer two")

            rest = await settled_after(client, session_id, next_turn)
            assert [e.type for e in rest][-2:] == [
                "agent.session.turn.completed",
                "agent.session.idle",
            ]
            assert [m["content"][0]["text"] for m in peer.started_with] == ["steer two"]
            await in_thread(lambda: _check_history(client, session_id, run_id))

    asyncio.run(main())


def _check_history(client: OpenAI, session_id: str, first_turn: str) -> None:
    turns = client.beta.agents.sessions.turns.list(session_id, order="asc").data
    assert [(t.id == first_turn, t.status) for t in turns] == [
        (True, "completed"),
        (False, "completed"),
    ]
    assert turns[0].x_corebox["unknown_inputs"] == 1  # type: ignore[attr-defined]
    assert turns[1].x_corebox["unknown_inputs"] == 0  # type: ignore[attr-defined]
    items = client.beta.agents.sessions.items.list(session_id, order="asc").data
    users = {i.content[0].text: i for i in items if i.type == "message" and i.role == "user"}
    assert users["steer one"].x_corebox == {"delivery": "unknown"}  # type: ignore[attr-defined]
    assert getattr(users["steer two"], "x_corebox", None) is None
    assistant = [i.content[0].text for i in items if i.type == "message" and i.role == "assistant"]
    assert assistant == ["answer one", "answer two"]
