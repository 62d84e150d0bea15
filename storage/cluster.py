"""Several Core processes on one database: their rows, and the claims they share.

Every statement here is portable SQL (compare-and-set updates, `INSERT ... ON CONFLICT
DO NOTHING`), but for a row lock skipped on PostgreSQL, so the same functions coordinate
processes on either backend. Contracts:
- A process is live while its row has no `stopped_at` and its `heartbeat_at` is recent;
  `lapse` marks a silent one stopped by compare-and-set, so exactly one peer wins the
  right to recover its turns.
- `reserve` gives a queued turn to one process for a bounded time (the preparation
  before the claim); only the holder, or anyone once it lapsed, may take it again. On
  PostgreSQL a turn whose row another transaction holds is skipped, not waited for
  (`SKIP LOCKED`). The claim itself stays the compare-and-set `queued -> in_progress`
  of `storage.turns`.
- `claim_firing` returns True to exactly one caller per (job, slot).
"""

from __future__ import annotations

from typing import Any

from storage.database import Tx
from storage.rows import Queryable

RUNNING = ("in_progress", "waiting")


async def register(tx: Tx, process_id: str, host: str, pid: int, now: int) -> None:
    await tx.execute(
        "INSERT INTO core_processes (id, host, pid, started_at, heartbeat_at)"
        " VALUES (?, ?, ?, ?, ?)",
        (process_id, host, pid, now, now),
    )


async def beat(tx: Tx, process_id: str, now: int) -> bool:
    """Renew the heartbeat; False when the process was already marked stopped (a peer
    found it silent and recovered its turns: it must not go on as if it were live)."""
    changed = await tx.execute(
        "UPDATE core_processes SET heartbeat_at = ? WHERE id = ? AND stopped_at IS NULL",
        (now, process_id),
    )
    return changed == 1


async def stop(tx: Tx, process_id: str, now: int) -> None:
    """A clean stop: the row is closed and its Runtime connections are forgotten."""
    await tx.execute(
        "UPDATE core_processes SET stopped_at = ?, stop_reason = 'stopped'"
        " WHERE id = ? AND stopped_at IS NULL",
        (now, process_id),
    )
    await tx.execute("DELETE FROM runtime_connections WHERE process_id = ?", (process_id,))


async def silent(q: Queryable, older_than: int) -> list[str]:
    """Processes not stopped whose last heartbeat is before `older_than`."""
    rows = await q.fetchall(
        "SELECT id FROM core_processes WHERE stopped_at IS NULL AND heartbeat_at < ? ORDER BY id",
        (older_than,),
    )
    return [str(row["id"]) for row in rows]


async def lapse(tx: Tx, process_id: str, older_than: int, now: int) -> bool:
    """Mark a silent process stopped (`lapsed`), compare-and-set on its heartbeat still
    being old; True for the one caller that did it. Its Runtime connections and the
    reservations it held go."""
    changed = await tx.execute(
        "UPDATE core_processes SET stopped_at = ?, stop_reason = 'lapsed'"
        " WHERE id = ? AND stopped_at IS NULL AND heartbeat_at < ?",
        (now, process_id, older_than),
    )
    if changed != 1:
        return False
    await tx.execute("DELETE FROM runtime_connections WHERE process_id = ?", (process_id,))
    await tx.execute(
        "UPDATE turns SET reserved_until = NULL WHERE core_process_id = ? AND status = 'queued'",
        (process_id,),
    )
    return True


async def live(q: Queryable, since: int) -> list[dict[str, Any]]:
    """Processes not stopped that beat at or after `since`, oldest start first."""
    rows = await q.fetchall(
        "SELECT * FROM core_processes WHERE stopped_at IS NULL AND heartbeat_at >= ?"
        " ORDER BY started_at, id",
        (since,),
    )
    return [dict(row) for row in rows]


async def processes(q: Queryable, limit: int = 100) -> list[dict[str, Any]]:
    """The latest processes, newest start first, each with its connected devices."""
    rows = await q.fetchall(
        "SELECT * FROM core_processes ORDER BY started_at DESC, id DESC LIMIT ?", (limit,)
    )
    found = [dict(row) for row in rows]
    for row in found:
        devices = await q.fetchall(
            "SELECT device_id FROM runtime_connections WHERE process_id = ? ORDER BY device_id",
            (row["id"],),
        )
        row["devices"] = [str(d["device_id"]) for d in devices]
    return found


async def orphaned_turns(q: Queryable, since: int) -> list[dict[str, Any]]:
    """Running turns no live process owns: claimed by a process that stopped or is
    silent since before `since`, or by none recorded (claimed before processes were
    recorded)."""
    rows = await q.fetchall(
        "SELECT t.* FROM turns_full t WHERE t.status IN (?, ?) AND (t.core_process_id IS NULL"
        " OR NOT EXISTS (SELECT 1 FROM core_processes p WHERE p.id = t.core_process_id"
        " AND p.stopped_at IS NULL AND p.heartbeat_at >= ?))",
        (*RUNNING, since),
    )
    return [dict(row) for row in rows]


async def turns_of(q: Queryable, process_id: str) -> list[dict[str, Any]]:
    """Running turns claimed by `process_id`."""
    rows = await q.fetchall(
        "SELECT * FROM turns_full WHERE core_process_id = ? AND status IN (?, ?)",
        (process_id, *RUNNING),
    )
    return [dict(row) for row in rows]


async def connected(tx: Tx, process_id: str, devices: list[str], now: int) -> None:
    """Make the recorded Runtime connections of `process_id` exactly `devices`."""
    held = await tx.fetchall(
        "SELECT device_id FROM runtime_connections WHERE process_id = ?", (process_id,)
    )
    recorded = {str(row["device_id"]) for row in held}
    for device_id in recorded - set(devices):
        await tx.execute(
            "DELETE FROM runtime_connections WHERE process_id = ? AND device_id = ?",
            (process_id, device_id),
        )
    for device_id in sorted(set(devices) - recorded):
        await tx.execute(
            "INSERT INTO runtime_connections (device_id, process_id, connected_at)"
            " VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
            (device_id, process_id, now),
        )


async def holders(q: Queryable, device_id: str) -> list[str]:
    """The processes that hold a connection of `device_id`."""
    rows = await q.fetchall(
        "SELECT process_id FROM runtime_connections WHERE device_id = ? ORDER BY process_id",
        (device_id,),
    )
    return [str(row["process_id"]) for row in rows]


# Which queued turn may be reserved: compare-and-set on its status and reservation.
RESERVABLE = (
    "id = ? AND status = 'queued' AND (core_process_id IS NULL"
    " OR core_process_id = ? OR reserved_until IS NULL OR reserved_until < ?)"
)


async def reserve(tx: Tx, turn_id: str, process_id: str, until: int, now: int) -> bool:
    """Give the queued turn to `process_id` until `until`; False when another process
    holds an unexpired reservation or the turn is no longer queued. On PostgreSQL, also
    False at once when another transaction holds the turn's row (`SKIP LOCKED`): that
    process is reserving or changing it, and this one does not wait for its commit (the
    turn is looked at again at the next wake-up if it is still free then)."""
    if tx.backend == "postgresql":
        where = f"id = (SELECT id FROM turns WHERE {RESERVABLE} FOR UPDATE SKIP LOCKED)"
    else:
        where = RESERVABLE
    changed = await tx.execute(
        f"UPDATE turns SET core_process_id = ?, reserved_until = ? WHERE {where}",
        (process_id, until, turn_id, process_id, now),
    )
    return changed == 1


async def release(tx: Tx, turn_id: str, process_id: str) -> None:
    """Give back a reservation the holder could not use (the turn stays queued)."""
    await tx.execute(
        "UPDATE turns SET reserved_until = NULL WHERE id = ? AND status = 'queued'"
        " AND core_process_id = ?",
        (turn_id, process_id),
    )


async def claim_firing(tx: Tx, job: str, slot: int, process_id: str, now: int) -> bool:
    """True for exactly one caller per (job, slot)."""
    changed = await tx.execute(
        "INSERT INTO cluster_firings (job, slot, process_id, fired_at) VALUES (?, ?, ?, ?)"
        " ON CONFLICT DO NOTHING",
        (job, slot, process_id, now),
    )
    return changed == 1


async def prune(tx: Tx, before: int) -> None:
    """Forget firings and stopped processes older than `before`."""
    await tx.execute("DELETE FROM cluster_firings WHERE fired_at < ?", (before,))
    await tx.execute(
        "DELETE FROM core_processes WHERE stopped_at IS NOT NULL AND stopped_at < ?", (before,)
    )
