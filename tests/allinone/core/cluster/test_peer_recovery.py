"""The crash rules across processes, on a real database file: at start-up a process
recovers only the running turns no live process owns, and a peer found gone has its
running turns recovered (failed as interrupted here: nothing was checkpointed), the
live peers' turns left alone."""

from __future__ import annotations

import asyncio
import logging
from functools import partial
from pathlib import Path

import pytest

from allinone.core.hub import Hub
from allinone.core.ids import Clock, Ids
from allinone.core.orchestration.outcomes import Outcomes
from allinone.core.orchestration.projector import Projector
from allinone.core.orchestration.recovery import Recovery
from allinone.core.orchestration.transitions import move
from allinone.core.recorder import Recorder
from allinone.core.states import TurnStatus
from storage import Database, cluster, sessions, turns
from storage.database import Tx


async def _claimed(db: Database, turn_id: str, process_id: str) -> None:
    """A session with a turn claimed by `process_id` (no checkpoint)."""

    async def job(tx: Tx) -> None:
        await tx.execute(
            "INSERT INTO projects (id, name, created_at) VALUES ('p', 'p', 0)"
            " ON CONFLICT DO NOTHING"
        )
        await sessions.insert(
            tx,
            {
                "id": f"s_{turn_id}",
                "project_id": "p",
                "agent_id": "a",
                "harness": "scripted",
                "created_at": 0,
                "agent": {},
                "environment": {"type": "none"},
                "metadata": {},
                "vault_ids": [],
            },
        )
        await turns.insert(tx, turn_id, f"s_{turn_id}", "a", 0)
        fields = {"fencing_token": turn_id, "started_at": 1, "core_process_id": process_id}
        assert await move(tx, turn_id, TurnStatus.IN_PROGRESS, (TurnStatus.QUEUED,), fields=fields)

    await db.write(job)


def _recovery(db: Database) -> Recovery:
    clock = Clock()
    ids = Ids(clock)
    recorder = Recorder(Hub(), ids, clock)
    return Recovery(db, Outcomes(db, recorder, Projector(recorder, ids, clock), clock))


async def _statuses(db: Database) -> dict[str, str]:
    rows = await db.read(turns.running)
    running = {str(row["id"]) for row in rows}
    found = {}
    for turn_id in ("t_live", "t_gone", "t_none"):
        row = await db.read(partial(turns.get, turn_id=turn_id))
        assert row is not None
        found[turn_id] = "running" if turn_id in running else str(row["status"])
    return found


def test_start_up_recovers_only_what_no_live_process_owns(tmp_path: Path) -> None:
    async def main() -> None:
        db = await Database.open(tmp_path / "db")
        try:
            now = Clock().now()
            await db.write(partial(cluster.register, process_id="live", host="h", pid=1, now=now))
            await db.write(partial(cluster.register, process_id="gone", host="h", pid=2, now=1))
            await _claimed(db, "t_live", "live")
            await _claimed(db, "t_gone", "gone")
            await _claimed(db, "t_none", "never-recorded")
            assert await _recovery(db).after_restart(since=now - 20) == (0, 2)
            assert await _statuses(db) == {
                "t_live": "running",
                "t_gone": "failed",
                "t_none": "failed",
            }
            # One process alone (no `since`): every running turn, as before.
            assert await _recovery(db).after_restart() == (0, 1)
        finally:
            await db.close()

    asyncio.run(main())


def test_a_gone_peer_has_its_turns_and_only_its_turns_recovered(tmp_path: Path) -> None:
    async def main() -> None:
        db = await Database.open(tmp_path / "db")
        try:
            await _claimed(db, "t_live", "live")
            await _claimed(db, "t_gone", "gone")
            await _claimed(db, "t_none", "other")
            assert await _recovery(db).peer_lapsed("gone") == (0, 1)
            assert await _statuses(db) == {
                "t_live": "running",
                "t_gone": "failed",
                "t_none": "running",
            }
            row = await db.read(partial(turns.get, turn_id="t_gone"))
            assert row is not None and row["error_code"] == "execution_interrupted"
        finally:
            await db.close()

    asyncio.run(main())


def test_a_paused_turn_stays_paused_at_start_up_and_the_log_says_so(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async def main() -> None:
        db = await Database.open(tmp_path / "db")
        try:
            await _claimed(db, "t_paused", "gone")

            async def pause(tx: Tx) -> None:
                await tx.execute("UPDATE turns SET phase = 'paused' WHERE id = 't_paused'")

            await db.write(pause)
            with caplog.at_level(logging.INFO, logger="allinone.core.orchestration.recovery"):
                assert await _recovery(db).after_restart() == (0, 0)
            assert [row["id"] for row in await db.read(turns.running)] == ["t_paused"]
            # Nothing continued and nothing failed: no warning, one line for the pause.
            assert [(r.levelname, r.getMessage()) for r in caplog.records] == [
                ("INFO", "after a restart: 1 paused turn(s) stay paused until resumed")
            ]
            await _claimed(db, "t_running", "gone")
            caplog.clear()
            assert await _recovery(db).after_restart() == (0, 1)
            assert [r.getMessage() for r in caplog.records if r.levelname == "WARNING"] == [
                "after a restart: 0 turn(s) continue from their checkpoint, 1 failed"
            ]
        finally:
            await db.close()

    asyncio.run(main())
