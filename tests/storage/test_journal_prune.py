"""Tier 3: the journal is pruned in bounded batches that leave every retained event
readable and let other writes through between batches."""

from __future__ import annotations

import asyncio
from functools import partial
from pathlib import Path

from storage import Database, journal, journal_prune
from storage.database import Tx

from .test_journal import _session

EVENTS = 3000
SESSIONS = 3


async def _fill(db: Database, session_id: str, count: int) -> None:
    """`count` whole events appended to `session_id` in one job (a fixture)."""

    async def job(tx: Tx) -> None:
        for seq in range(1, count + 1):
            await journal.append(tx, session_id, seq, f"evt_{seq}", "agent.session.idle", "{}")
        await tx.execute("UPDATE sessions SET event_seq = ? WHERE id = ?", (count, session_id))

    await db.write(job)


def test_batches_delete_at_most_their_bound_and_a_pass_leaves_the_retained(
    tmp_path: Path,
) -> None:
    keep = 10
    prunable = SESSIONS * (EVENTS - keep - journal.REACH)

    async def main() -> tuple[list[int], int, list[int]]:
        db = await Database.open(tmp_path / "p.db")
        for index in range(SESSIONS):
            await _session(db, f"s{index}")
            await _fill(db, f"s{index}", EVENTS)
        batches: list[int] = []
        pruner = journal_prune.JournalPruner(db, keep=keep, rows=200)
        total = await pruner.run(batches.append)
        again = await pruner.run()
        readable = [
            len(await db.read(partial(journal.after, session_id=f"s{i}", seq=EVENTS - keep)))
            for i in range(SESSIONS)
        ]
        await db.close()
        assert again == 0
        return batches, total, readable

    batches, total, readable = asyncio.run(main())
    assert total == prunable
    assert max(batches) <= 200 and len(batches) >= prunable // 200
    assert readable == [keep] * SESSIONS


def test_other_writes_go_through_while_a_long_prune_runs(tmp_path: Path) -> None:
    async def main() -> tuple[int, int]:
        db = await Database.open(tmp_path / "w.db")
        await _session(db, "s")
        await _fill(db, "s", EVENTS)
        first_batch = asyncio.Event()
        deleted: list[int] = []

        def on_batch(count: int) -> None:
            deleted.append(count)
            first_batch.set()

        pruner = journal_prune.JournalPruner(db, keep=0, rows=100)
        running = asyncio.create_task(pruner.run(on_batch))
        await first_batch.wait()
        await db.write(lambda tx: tx.execute("UPDATE sessions SET metadata = '{}'"))
        during = sum(deleted)
        total = await running
        await db.close()
        return during, total

    during, total = asyncio.run(main())
    # The write was committed while most of the prune was still to come.
    assert total == EVENTS - journal.REACH
    assert during < total / 2
