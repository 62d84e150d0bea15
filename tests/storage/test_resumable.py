"""Tier 3: the scheduler's look for running turns to continue from their checkpoint
(`checkpoints.resumable`), on both backends, and on SQLite the index it reads."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from storage import Database, checkpoints
from storage.database import Tx
from tests.storage.conftest import Target, add_sessions

# (turn, status, phase): one turn per session, since a session has one active turn.
TURNS = [
    ("t1", "in_progress", "resuming"),
    ("t2", "in_progress", "running"),
    ("t3", "waiting", "resuming"),
    ("t4", "waiting", None),
    ("t5", "completed", "resuming"),
    ("t6", "queued", None),
    ("t7", "in_progress", None),
]


async def _add_turns(tx: Tx) -> None:
    await add_sessions(tx, *(f"s-{turn}" for turn, _, _ in TURNS))
    for turn, status, phase in TURNS:
        await tx.execute(
            "INSERT INTO turns (id, session_id, agent_id, status, created_at, completed_at,"
            " phase) VALUES (?, ?, 'a', ?, 0, ?, ?)",
            (turn, f"s-{turn}", status, 1 if status == "completed" else None, phase),
        )


def test_resumable_gives_the_running_turns_marked_resuming_oldest_first(
    target: Target,
) -> None:
    async def main() -> list[str]:
        db = await Database.open(target("r.db"))
        try:
            await db.write(_add_turns)
            return [row["id"] for row in await db.read(checkpoints.resumable)]
        finally:
            await db.close()

    assert asyncio.run(main()) == ["t1", "t3"]


class _Recorder:
    """A `Queryable` that keeps the statements it is given and answers none."""

    backend = "sqlite"

    def __init__(self) -> None:
        self.statements: list[tuple[str, tuple[Any, ...]]] = []

    async def fetchone(self, sql: str, params: Iterable[Any] = ()) -> None:
        self.statements.append((sql, tuple(params)))

    async def fetchall(self, sql: str, params: Iterable[Any] = ()) -> list[sqlite3.Row]:
        self.statements.append((sql, tuple(params)))
        return []


def test_resumable_reads_only_the_turns_its_index_holds(tmp_path: Path) -> None:
    """SQLite only: the statement `resumable` issues searches the partial index of
    resuming running turns, so a pass costs the same with no running turn or a thousand
    (the running turns' own index would have it read every running turn)."""

    async def migrate() -> None:
        await (await Database.open(tmp_path / "r.db")).close()

    asyncio.run(migrate())
    recorder = _Recorder()
    asyncio.run(checkpoints.resumable(recorder))
    [(sql, params)] = recorder.statements
    conn = sqlite3.connect(tmp_path / "r.db")
    try:
        plan = [row[3] for row in conn.execute(f"EXPLAIN QUERY PLAN {sql}", params)]
    finally:
        conn.close()
    scans = [step for step in plan if step.startswith(("SCAN t", "SEARCH t"))]
    assert scans == ["SCAN t USING INDEX turns_resuming"], plan
