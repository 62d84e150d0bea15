"""A turn left queued for a reason a retry at once would meet again is not retried at
once: a claim that storage refused gives the Runtime's admission back (else every
retry finds the Runtime's capacity taken, for good), and a `preparation_capacity`
refusal is tried again when a run ends or after the retry interval, not in a loop of
refusals. Driven through a Runtime that answers only what the test scripts."""

from __future__ import annotations

import asyncio
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from openai import OpenAI

from storage.database import Database
from tests.allinone.core.orchestration.hostile import (
    TIMERS,
    WAIT,
    RealCore,
    ScriptedPeer,
    in_thread,
)

# Long enough that only a run ending can bring a retry within the test.
NO_RETRY_BY_TIME = replace(TIMERS, retry_seconds=600.0)
# How long the test listens for a retry that must not come (it comes at once if it does).
QUIET = 1.0


async def writes_refused(db: Database | None, refused: bool) -> None:
    """Make the server's own writer connection refuse every write (`query_only`, which
    holds for root too), or take them again. Set outside any transaction: a refusing
    writer cannot begin one."""
    assert db is not None
    writer = db._writer  # the fault is the writer connection's own
    await writer.run(writer.driver.run, f"PRAGMA query_only = {'ON' if refused else 'OFF'}")


async def ready(peer: ScriptedPeer, prepare: dict[str, Any]) -> None:
    """Answer `prepare` with `preparing`, then `ready`."""
    peer.prep_id = prepare["id"]
    status = {"handle": "h-" + peer.prep_id, "expires_at": int(time.time() * 1000) + 300_000}
    await peer.status({"revision": 1, "state": "preparing"} | status)
    await peer.status({"revision": 2, "state": "ready", "executor_id": "executor-1"} | status)


def create(client: OpenAI, text: str) -> str:
    return client.beta.agents.sessions.create(
        agent={"model": "scripted"}, environment={"type": "none"}, input=text
    ).id


def settled(client: OpenAI, session_id: str) -> str:
    give_up = time.monotonic() + WAIT
    while True:
        status = client.beta.agents.sessions.turns.list(session_id).data[0].status
        if status in ("completed", "failed", "cancelled"):
            return status
        assert time.monotonic() < give_up, f"the turn of {session_id} never settled"
        time.sleep(0.05)


async def nothing_comes(peer: ScriptedPeer) -> None:
    try:
        frame = await asyncio.wait_for(peer.ws.recv(), QUIET)
    except TimeoutError:
        return
    raise AssertionError(f"Core sent {frame!r} where it had nothing to ask")


def test_a_claim_storage_refused_gives_the_admission_back_and_runs_once_it_can(
    tmp_path: Path,
) -> None:
    async def main() -> None:
        async with RealCore(tmp_path) as core:
            peer = await core.runtime()
            with core.client() as client:
                session_id = await in_thread(lambda: create(client, "hi"))
                prepare = await peer.receive("execution_prepare")
                await writes_refused(core.db, True)
                await ready(peer, prepare)
                await peer.released()  # the claim failed: the admission is given back
                await writes_refused(core.db, False)
                await peer.play_turn("hi")
                assert await in_thread(lambda: settled(client, session_id)) == "completed"

    asyncio.run(main())


def test_a_turn_the_runtime_had_no_room_for_is_tried_again_when_a_run_ends(
    tmp_path: Path,
) -> None:
    async def main() -> None:
        async with RealCore(tmp_path, NO_RETRY_BY_TIME) as core:
            peer = await core.runtime()
            with core.client() as client:
                first = await in_thread(lambda: create(client, "one"))
                run_id = await peer.start_run()
                second = await in_thread(lambda: create(client, "two"))
                refused = await peer.receive("execution_prepare")
                await peer.send(
                    "preparation_status",
                    refused["id"],
                    {"revision": 1, "state": "rejected", "error_code": "preparation_capacity"},
                )
                await nothing_comes(peer)  # no retry while nothing has changed
                await peer.message("m1", "one")
                await peer.send("done", run_id, {})
                assert await in_thread(lambda: settled(client, first)) == "completed"
                await peer.play_turn("two")  # the run's end brought the retry
                assert await in_thread(lambda: settled(client, second)) == "completed"

    asyncio.run(main())
