"""A turn's owner keeps its lease while it observes the run, frames or not: a Runtime
that is legitimately quiet for longer than the lease (a turn waiting for a function
result) is not failed by the lease sweep, which no longer skips turns this process
owns."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from openai import OpenAI

from allinone.core.orchestration.timers import Timers
from tests.allinone.core.orchestration.hostile import connected, in_thread

SHORT_LEASE = Timers(
    preparation_seconds=2.0,
    start_seconds=2.0,
    cancel_unconfirmed_seconds=1.0,
    lease_seconds=2,
    lease_renew_seconds=0.5,
    lease_sweep_seconds=0.25,
    retry_seconds=0.2,
)
QUIET = 3 * SHORT_LEASE.lease_seconds  # the one timed wait: nothing may happen within it
TOOL = {
    "type": "function",
    "name": "get_weather",
    "description": "Weather for a city.",
    "parameters": {"type": "object", "properties": {}},
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


def test_a_quiet_observed_turn_outlives_its_lease(tmp_path: Path) -> None:
    async def main() -> None:
        async with connected(tmp_path, SHORT_LEASE) as (peer, client):
            created = asyncio.create_task(in_thread(lambda: _create(client)))
            run_id = await peer.start_run()
            await peer.send(
                "function_call",
                run_id,
                {"call_id": "c1", "name": "get_weather", "arguments": {}},
            )
            await asyncio.sleep(QUIET)
            assert not created.done()
            await peer.message("m1", "still here")
            await peer.send("done", run_id, {})
            events = await asyncio.wait_for(created, 20)
            completed = [e for e in events if e.type == "agent.session.turn.completed"]
            assert len(completed) == 1, [e.type for e in events]

    asyncio.run(main())
