"""A cancellation the Runtime never confirms becomes a finite, visible unknown
(`cancel_unconfirmed`) within the cancellation timer, counted from the moment the
cancellation was sent, and the session stays usable. So does one the Runtime refuses
because it could not settle it."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from openai import OpenAI

from tests.allinone.core.orchestration.hostile import (
    ScriptedPeer,
    connected,
    create_streamed,
    in_thread,
)


async def _cancelled_turn(client: OpenAI, peer: ScriptedPeer, answer: str) -> tuple[str, list[Any]]:
    """Start a turn, cancel it, let the peer answer the cancellation as `answer` says;
    return the session id and its creation stream's events."""
    created = asyncio.create_task(in_thread(lambda: create_streamed(client, "hang")))
    run_id = await peer.start_run()
    await peer.send("output_message", run_id, {"id": "m1", "status": "in_progress"})
    session_id = await _session_of(client, run_id)
    await in_thread(
        lambda: client.beta.agents.sessions.events.create(
            session_id, events=[{"type": "agent.session.input.cancel"}]
        )
    )
    cancel = await peer.receive("prompt_cancel")
    delivery_id = cancel["payload"]["delivery_id"]
    if answer == "receipt only":
        await peer.send(
            "interaction_decision_ack", run_id, {"delivery_id": delivery_id, "applied": True}
        )
    elif answer == "receipt with outcome":
        await peer.send(
            "interaction_decision_ack",
            run_id,
            {"delivery_id": delivery_id, "applied": True, "outcome": {}},
        )
    elif answer == "done, then refused":
        await peer.send("done", run_id, {})
        await peer.send(
            "interaction_decision_ack",
            run_id,
            {"delivery_id": delivery_id, "applied": False, "error_code": "cancel_failed"},
        )
    events = await asyncio.wait_for(created, 20)
    return session_id, events


async def _session_of(client: OpenAI, run_id: str) -> str:
    def find() -> str:
        for session in client.beta.agents.sessions.list():
            if client.beta.agents.sessions.turns.list(session.id).data[0].id == run_id:
                return session.id
        raise AssertionError("no session runs " + run_id)

    return await in_thread(find)


def _check_unconfirmed(client: OpenAI, session_id: str, events: list[Any]) -> None:
    assert [e.type for e in events][-2:] == ["agent.session.turn.failed", "agent.session.idle"]
    turn = client.beta.agents.sessions.turns.list(session_id).data[0]
    assert turn.status == "failed"
    assert turn.x_corebox["error_code"] == "cancel_unconfirmed"  # type: ignore[attr-defined]
    items = client.beta.agents.sessions.items.list(session_id, order="asc").data
    assert [i.status for i in items if i.type == "message" and i.role == "assistant"] == [
        "incomplete"
    ]


async def _next_turn_runs(client: OpenAI, peer: ScriptedPeer, session_id: str) -> None:
    """The SDK's helper (which needs an idle session) runs the next turn."""

    def stream() -> Any:
        with client.beta.agents.sessions.stream(session_id, input="again") as live:
            return live.get_final_result()

    result = asyncio.create_task(in_thread(stream))
    await peer.play_turn("again")
    final = await asyncio.wait_for(result, 20)
    assert (final.turn.status, final.output_text) == ("completed", "again")


def test_a_runtime_silent_after_a_cancellation_leaves_the_turn_cancel_unconfirmed(
    tmp_path: Path,
) -> None:
    async def main() -> None:
        async with connected(tmp_path) as (peer, client):
            session_id, events = await _cancelled_turn(client, peer, "silence")
            await in_thread(lambda: _check_unconfirmed(client, session_id, events))
            await _next_turn_runs(client, peer, session_id)

    asyncio.run(main())


def test_a_receipt_without_done_or_outcome_is_cancel_unconfirmed(tmp_path: Path) -> None:
    async def main() -> None:
        async with connected(tmp_path) as (peer, client):
            session_id, events = await _cancelled_turn(client, peer, "receipt only")
            await in_thread(lambda: _check_unconfirmed(client, session_id, events))
            await _next_turn_runs(client, peer, session_id)

    asyncio.run(main())


def test_a_cancellation_the_runtime_could_not_settle_is_cancel_unconfirmed_after_done(
    tmp_path: Path,
) -> None:
    """A `done` followed by a refusal other than `run_inactive` (the Runtime stopped the
    Run but could not confirm its native work ended) is not a completed turn."""

    async def main() -> None:
        async with connected(tmp_path) as (peer, client):
            session_id, events = await _cancelled_turn(client, peer, "done, then refused")
            await in_thread(lambda: _check_unconfirmed(client, session_id, events))
            await _next_turn_runs(client, peer, session_id)

    asyncio.run(main())


def test_a_receipt_carrying_the_outcome_cancels_the_turn_without_done(tmp_path: Path) -> None:
    async def main() -> None:
        async with connected(tmp_path) as (peer, client):
            session_id, events = await _cancelled_turn(client, peer, "receipt with outcome")
            types = [e.type for e in events]
            assert types[-2:] == ["agent.session.turn.cancelled", "agent.session.idle"]
            turns = await in_thread(lambda: client.beta.agents.sessions.turns.list(session_id))
            assert turns.data[0].status == "cancelled"
            await _next_turn_runs(client, peer, session_id)

    asyncio.run(main())
