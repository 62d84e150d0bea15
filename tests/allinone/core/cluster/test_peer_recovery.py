"""The crash rules across processes, on a real database file: at start-up a process
recovers only the running turns no live process owns, and a peer found gone has its
running turns recovered (failed as interrupted here: nothing was checkpointed), the
live peers' turns left alone."""

from __future__ import annotations

import asyncio
import logging
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from allinone.core.hub import Hub
from allinone.core.ids import Clock, Ids
from allinone.core.orchestration.outcomes import Outcomes
from allinone.core.orchestration.projector import Projector
from allinone.core.orchestration.recovery import Recovery
from allinone.core.orchestration.transitions import move
from allinone.core.recorder import Recorder
from allinone.core.states import TurnStatus
from storage import Database, cluster, commands, sessions, turns
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


async def _pausing_at_a_checkpoint(db: Database, turn_id: str, asked: list[str]) -> None:
    """A claimed turn with a restorable checkpoint, on its way to a pause (phase
    `pausing`) when the process stopped, with open commands `asked` (oldest first)."""
    await _claimed(db, turn_id, "gone")

    async def job(tx: Tx) -> None:
        await tx.execute(
            "UPDATE turns SET phase = 'pausing', checkpoint_cursor = 'c',"
            " checkpoint_token = fencing_token WHERE id = ?",
            (turn_id,),
        )
        for n, action in enumerate(asked):
            await commands.insert(
                tx,
                {
                    "id": f"cmd_{turn_id}_{n}",
                    "project_id": "p",
                    "session_id": f"s_{turn_id}",
                    "turn_id": turn_id,
                    "action": action,
                    "status": "accepted",
                    "actor": "key_1",
                    "request_hash": "h",
                    "created_at": n,
                    "updated_at": n,
                },
            )

    await db.write(job)


def test_a_drains_unfinished_pause_is_no_pause_at_the_next_start(tmp_path: Path) -> None:
    # A drain pauses running turns with no command; one whose Run had not stopped when
    # the process did is on its way to `resuming`, not to `paused`. A pause someone
    # asked for (the newest of its open commands) is applied as before.
    async def main() -> None:
        db = await Database.open(tmp_path / "db")
        try:
            await _pausing_at_a_checkpoint(db, "t_drained", [])
            await _pausing_at_a_checkpoint(db, "t_asked", ["pause"])
            await _pausing_at_a_checkpoint(db, "t_overtaken", ["pause", "resume"])
            assert await _recovery(db).after_restart() == (3, 0)
            phases = {
                turn_id: (await db.read(partial(turns.get, turn_id=turn_id)) or {})["phase"]
                for turn_id in ("t_drained", "t_asked", "t_overtaken")
            }
            assert phases == {
                "t_drained": "resuming",
                "t_asked": "paused",
                "t_overtaken": "resuming",
            }
            settled = {
                row["id"]: row["status"]
                for turn_id in ("t_asked", "t_overtaken")
                for row in await db.read(partial(_commands_of, turn_id=turn_id))
            }
            assert settled == {
                "cmd_t_asked_0": "applied",
                "cmd_t_overtaken_0": "applied",  # the pause happened, then the resume
                "cmd_t_overtaken_1": "accepted",  # applied by the re-claim
            }
        finally:
            await db.close()

    asyncio.run(main())


async def _commands_of(r: Any, turn_id: str) -> list[dict[str, Any]]:
    return [
        dict(row)
        for row in await r.fetchall("SELECT * FROM commands WHERE turn_id = ?", (turn_id,))
    ]
