"""A Runtime that breaks the contract fails the turn at once with `contract_violation`,
visibly and with nothing fabricated: a repeated function call id or interaction id, a
receipt that says applied and carries an error code. The session stays usable."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from openai import OpenAI

from tests.allinone.core.orchestration.hostile import ScriptedPeer, connected, in_thread

TOOL = {
    "type": "function",
    "name": "get_weather",
    "description": "Weather for a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
}


def _create(client: OpenAI) -> list[Any]:
    return list(
        client.beta.agents.sessions.create(
            agent={"model": "scripted", "tools": [TOOL]},  # type: ignore[list-item]
            environment={"type": "none"},
            input="call it",
            stream=True,
        )
    )


async def _call(peer: ScriptedPeer, call_id: str) -> None:
    await peer.send(
        "function_call",
        peer.run_id,
        {"call_id": call_id, "name": "get_weather", "arguments": {"city": "Paris"}},
    )


def _check_violation(client: OpenAI, events: list[Any]) -> str:
    assert [e.type for e in events][-2:] == ["agent.session.turn.failed", "agent.session.idle"]
    session_id = str(events[0].session.id)
    turn = client.beta.agents.sessions.turns.list(session_id).data[0]
    assert turn.status == "failed"
    assert turn.x_corebox["error_code"] == "contract_violation"  # type: ignore[attr-defined]
    assert client.beta.agents.sessions.retrieve(session_id).status == "idle"
    return session_id


async def _next_turn_runs(client: OpenAI, peer: ScriptedPeer, session_id: str) -> None:
    def stream() -> Any:
        with client.beta.agents.sessions.stream(session_id, input="again") as live:
            return live.get_final_result()

    result = asyncio.create_task(in_thread(stream))
    await peer.play_turn("again")
    final = await asyncio.wait_for(result, 20)
    assert (final.turn.status, final.output_text) == ("completed", "again")


def test_a_repeated_call_id_fails_the_turn_with_contract_violation(tmp_path: Path) -> None:
    async def main() -> None:
        async with connected(tmp_path) as (peer, client):
            created = asyncio.create_task(in_thread(lambda: _create(client)))
            await peer.start_run()
            await _call(peer, "call_1")
            await _call(peer, "call_1")
            cancel = await peer.receive("prompt_cancel")
            assert cancel["id"] == peer.run_id
            events = await asyncio.wait_for(created, 20)
            session_id = await in_thread(lambda: _check_violation(client, events))
            items = await in_thread(lambda: client.beta.agents.sessions.items.list(session_id).data)
            assert [i.type for i in items].count("function_call") == 1
            await _next_turn_runs(client, peer, session_id)

    asyncio.run(main())


async def _ask(peer: ScriptedPeer, request_id: str) -> None:
    await peer.send(
        "permission_request",
        peer.run_id,
        {"request_id": request_id, "tool": "shell", "title": "touch made.txt"},
    )


def test_a_repeated_interaction_id_fails_the_turn_with_contract_violation(
    tmp_path: Path,
) -> None:
    """Also across turns: an approval id the session already had, answered or not."""

    async def main() -> None:
        async with connected(tmp_path) as (peer, client):
            created = asyncio.create_task(in_thread(lambda: _create(client)))
            await peer.start_run()
            await _ask(peer, "perm_1")
            await _ask(peer, "perm_1")
            cancel = await peer.receive("prompt_cancel")
            assert cancel["id"] == peer.run_id
            events = await asyncio.wait_for(created, 20)
            session_id = await in_thread(lambda: _check_violation(client, events))
            await _next_turn_runs(client, peer, session_id)

            def next_turn() -> list[Any]:
                with client.beta.agents.sessions.stream(session_id, input="ask") as live:
                    return list(live)

            streamed = asyncio.create_task(in_thread(next_turn))
            await peer.start_run()
            await _ask(peer, "perm_1")
            await peer.receive("prompt_cancel")
            await asyncio.wait_for(streamed, 20)
            turn = await in_thread(
                lambda: client.beta.agents.sessions.turns.list(session_id, limit=1).data[0]
            )
            assert (turn.status, turn.x_corebox["error_code"]) == ("failed", "contract_violation")  # type: ignore[attr-defined]

    asyncio.run(main())


def test_an_applied_receipt_with_an_error_code_is_not_a_success(tmp_path: Path) -> None:
    async def main() -> None:
        async with connected(tmp_path) as (peer, client):
            created = asyncio.create_task(in_thread(lambda: _create(client)))
            run_id = await peer.start_run()
            await _call(peer, "call_1")
            await in_thread(
                lambda: client.beta.agents.sessions.events.create(
                    _session_of(client, run_id),
                    events=[
                        {
                            "type": "agent.session.input.tool_result",
                            "turn_id": run_id,
                            "call_id": "call_1",
                            "success": True,
                            "output": "sunny",
                        }
                    ],
                )
            )
            result = await peer.receive("function_result")
            await peer.send(
                "interaction_decision_ack",
                run_id,
                {
                    "delivery_id": result["payload"]["delivery_id"],
                    "applied": True,
                    "error_code": "runtime_error",
                },
            )
            await peer.receive("prompt_cancel")
            events = await asyncio.wait_for(created, 20)
            session_id = await in_thread(lambda: _check_violation(client, events))
            items = await in_thread(lambda: client.beta.agents.sessions.items.list(session_id).data)
            assert "function_call_output" not in [i.type for i in items]
            await _next_turn_runs(client, peer, session_id)

    asyncio.run(main())


def _session_of(client: OpenAI, run_id: str) -> str:
    for session in client.beta.agents.sessions.list():
        if client.beta.agents.sessions.turns.list(session.id).data[0].id == run_id:
            return session.id
    raise AssertionError("no session runs " + run_id)


def test_a_subagent_frame_before_its_identity_is_a_contract_violation(tmp_path: Path) -> None:
    async def main() -> None:
        async with connected(tmp_path) as (peer, client):
            created = asyncio.create_task(in_thread(lambda: _create(client)))
            await peer.start_run()
            await peer.send(
                "subagent_turn",
                peer.run_id,
                {
                    "native_id": "sub-1",
                    "turn_id": "sub-turn-1",
                    "status": "in_progress",
                    "created_at_ms": 1,
                },
            )
            await peer.receive("prompt_cancel")
            events = await asyncio.wait_for(created, 20)
            session_id = await in_thread(lambda: _check_violation(client, events))
            listed = await in_thread(
                lambda: client.beta.agents.sessions.subagents.list(session_id).data
            )
            assert listed == []
            await _next_turn_runs(client, peer, session_id)

    asyncio.run(main())
