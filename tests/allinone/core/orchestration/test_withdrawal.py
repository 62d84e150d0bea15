"""The final check before claiming (seed 000): a Runtime that withdraws the harness kind
or a capability the turn needs while its preparation is pending gets no
`execution_start`; the preparation is released and the turn stays queued until a
declaration covers it again."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests.allinone.core.orchestration.hostile import (
    CAPABILITIES,
    connected,
    create_streamed,
    in_thread,
)


@pytest.mark.parametrize("withdrawn", ["capability", "kind"])
def test_a_declaration_withdrawn_during_preparation_stops_the_start(
    tmp_path: Path, withdrawn: str
) -> None:
    async def main() -> None:
        async with connected(tmp_path) as (peer, client):
            created = asyncio.create_task(in_thread(lambda: create_streamed(client, "hi")))
            prepare = await peer.receive("execution_prepare")
            peer.prep_id = prepare["id"]
            status = {"handle": "h1", "expires_at": 2_000_000_000_000}
            await peer.status({"revision": 1, "state": "preparing"} | status)
            if withdrawn == "capability":
                await peer.declare(CAPABILITIES | {"steering": False})
            else:
                await peer.declare(CAPABILITIES, available=False)
            await peer.status({"revision": 2, "state": "ready", "executor_id": "e1"} | status)
            release = await peer.receive("execution_release")
            assert release["id"] == prepare["id"]
            assert release["payload"]["handle"] == "h1"
            # Declared again: the same turn, still queued, is dispatched and runs.
            await peer.declare(CAPABILITIES)
            await peer.play_turn("hello")
            events = await asyncio.wait_for(created, 20)
            assert [e.type for e in events][-2:] == [
                "agent.session.turn.completed",
                "agent.session.idle",
            ]
            turns = await in_thread(
                lambda: client.beta.agents.sessions.turns.list(events[0].session.id).data
            )
            assert len(turns) == 1 and turns[0].status == "completed"

    asyncio.run(main())
