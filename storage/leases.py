"""A claimed turn's lease and what its claim and its loss change in the rows.

The owner of a claimed turn renews `lease_expires_at` while it observes the run; the
lease sweep fails turns whose lease lapsed. The status moves themselves are
compare-and-set transitions (`storage.turns.transition`); these are the other writes
and the reads that go with them.
"""

from __future__ import annotations

from typing import Any

from storage.database import Tx
from storage.rows import Queryable, record


async def renew(tx: Tx, turn_id: str, expires_at: int) -> None:
    await tx.execute("UPDATE turns SET lease_expires_at = ? WHERE id = ?", (expires_at, turn_id))


async def expired(q: Queryable, now: int) -> list[dict[str, Any]]:
    """Running turns (`in_progress`, `waiting`) whose lease lapsed before `now`."""
    rows = await q.fetchall(
        "SELECT id, session_id FROM turns WHERE status IN ('in_progress', 'waiting')"
        " AND lease_expires_at IS NOT NULL AND lease_expires_at < ?",
        (now,),
    )
    return [dict(row) for row in rows]


async def take_initial_input(tx: Tx, turn_id: str) -> list[dict[str, Any]]:
    """At the claim: the messages admitted with the turn become its initial input, and
    are returned in order. A turn is claimed from `queued` once and only its claim makes
    inputs initial, so these are all of the turn's initial inputs."""
    rows = await tx.fetchall(
        "UPDATE turn_inputs SET state = 'initial' WHERE turn_id = ?"
        " AND kind = 'message' AND state = 'admitted' RETURNING *",
        (turn_id,),
    )
    taken = [r for r in (record(row, ("payload",)) for row in rows) if r is not None]
    return sorted(taken, key=lambda r: int(r["seq"]))


async def interrupt_items(tx: Tx, turn_id: str) -> None:
    """After a crash: the turn's unfinished items end `incomplete`."""
    await tx.execute(
        "UPDATE items SET status = 'incomplete' WHERE turn_id = ? AND status = 'in_progress'",
        (turn_id,),
    )
