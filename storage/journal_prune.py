"""Pruning the journal in bounded batches, so a retention prune never holds the writer.

The journal keeps the newest `journal.RETAINED_EVENTS` events of every session readable,
plus `journal.REACH` more as bases (`storage.journal`). Older rows are deleted a batch
at a time: one write job looks at no more than `SESSIONS_PER_BATCH` sessions (in
`journal_key` order, from a cursor) and deletes no more than `BATCH_ROWS` rows, each
session's oldest first, so every other write waits for one short job at most. A reader
that still needed a pruned event gets `stream_interrupted`.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from storage.database import Database, Tx
from storage.journal import REACH, RETAINED_EVENTS

BATCH_ROWS = 500
SESSIONS_PER_BATCH = 256


async def prune_batch(
    tx: Tx,
    cursor: int,
    *,
    keep: int = RETAINED_EVENTS,
    rows: int = BATCH_ROWS,
    sessions: int = SESSIONS_PER_BATCH,
) -> tuple[int, int | None]:
    """Delete at most `rows` prunable events of the sessions after `cursor` (a
    `journal_key`; 0 before the first); return how many were deleted and the cursor to
    pass next, None once the last session has been looked at."""
    found = await tx.fetchall(
        "SELECT journal_key, event_seq FROM sessions WHERE journal_key > ?"
        " ORDER BY journal_key LIMIT ?",
        (cursor, sessions),
    )
    budget = rows
    for row in found:
        key, cut = int(row["journal_key"]), int(row["event_seq"]) - (keep + REACH)
        if cut <= 0:
            continue
        first = await tx.fetchone(
            "SELECT MIN(seq) AS seq FROM session_events WHERE session_key = ?", (key,)
        )
        if first is None or first["seq"] is None or int(first["seq"]) > cut:
            continue
        # Sequence numbers are unique, so this range holds at most `budget` rows.
        upto = min(cut, int(first["seq"]) + budget - 1)
        budget -= await tx.execute(
            "DELETE FROM session_events WHERE session_key = ? AND seq <= ?", (key, upto)
        )
        if upto < cut:
            return rows - budget, key - 1  # this session again, in the next batch
        if budget <= 0:
            return rows - budget, key
    return rows - budget, int(found[-1]["journal_key"]) if len(found) == sessions else None


class JournalPruner:
    """Runs passes of `prune_batch` over every session, one write job per batch; the
    scheduler calls `run` (never two at once) and each call is one whole pass."""

    def __init__(self, db: Database, *, keep: int = RETAINED_EVENTS, rows: int = BATCH_ROWS):
        self._db = db
        self._keep = keep
        self._rows = rows

    async def run(self, on_batch: Callable[[int], None] | None = None) -> int:
        """Prune until one pass has looked at every session; return the rows deleted.
        `on_batch` is told each batch's count after its commit."""
        total, cursor = 0, 0
        while True:
            job = partial(prune_batch, cursor=cursor, keep=self._keep, rows=self._rows)
            deleted, after = await self._db.write(job)
            total += deleted
            if on_batch is not None:
                on_batch(deleted)
            if after is None:
                return total
            cursor = after
