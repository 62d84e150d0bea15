"""Turns: rows, compare-and-set transitions and the queue.

The database enforces at most one active (queued, in_progress, waiting) turn per session
and that `completed_at` is set exactly when a turn is terminal.

Turns are read through the view `turns_full` (migration 29), which gives each one as
readers know it; writers name fields the same way and `storage.turn_rows` stores them.
A turn that ends drops the run state only a running turn needs (`RUNNING_ONLY`) and its
consumed inputs admitted without an idempotency key.
"""

from __future__ import annotations

import functools
import sqlite3
from collections.abc import Mapping
from typing import Any

from storage import turn_rows
from storage.database import Tx
from storage.rows import Queryable, record

JSON_COLUMNS = ("usage", "context")
# Statuses in which a turn has ended.
ENDED = ("completed", "failed", "cancelled")
# Run state only a running turn needs, cleared when it ends (nothing reads it after):
# its resume cursor and token, the operation in flight, its lease, its deadline. The Core
# process and the device that ran it stay: they tell where it ran.
RUNNING_ONLY = (
    "checkpoint_cursor",
    "checkpoint_token",
    "inflight_operation",
    "lease_expires_at",
    "deadline_at_ms",
    "deadline_left_ms",
)


async def insert(tx: Tx, turn_id: str, session_id: str, agent_id: str, now: int) -> None:
    await tx.execute(
        "INSERT INTO turns (id, session_id, agent_id, status, created_at)"
        " VALUES (?, ?, ?, 'queued', ?)",
        (turn_id, session_id, agent_id, now),
    )


async def get(q: Queryable, turn_id: str) -> dict[str, Any] | None:
    row = await q.fetchone("SELECT * FROM turns_full WHERE id = ?", (turn_id,))
    return record(row, JSON_COLUMNS)


async def active(q: Queryable, session_id: str) -> dict[str, Any] | None:
    # The condition repeats the partial unique index's own, word for word, so SQLite
    # answers from that index instead of reading every turn of the session.
    row = await q.fetchone(
        "SELECT * FROM turns_full WHERE session_id = ?"
        " AND status IN ('queued', 'in_progress', 'waiting')",
        (session_id,),
    )
    return record(row, JSON_COLUMNS)


async def usage_total(q: Queryable, session_id: str) -> dict[str, Any] | None:
    """The sum of the usages of the session's ended turns that have one, from the
    running total the database keeps (migration 21's triggers): a turn that ended
    without a usage (refused before it ran, or its usage never reported) adds nothing
    and leaves the others' sum as it was. None (unknown, never zero) while any turn is
    active, or when no ended turn has a usage."""
    row = await q.fetchone(
        "SELECT s.usage_turns, s.usage_unmeasured, s.usage_input, s.usage_cached,"
        " s.usage_output, s.usage_reasoning, s.usage_total,"
        " EXISTS (SELECT 1 FROM turns t WHERE t.session_id = s.id"
        " AND t.status IN ('queued', 'in_progress', 'waiting')) AS has_active_turn"
        " FROM sessions s WHERE s.id = ?",
        (session_id,),
    )
    return None if row is None else usage_of(row)


def usage_of(session: Mapping[str, Any] | sqlite3.Row) -> dict[str, Any] | None:
    """`usage_total` from a session row that carries its running total and whether a
    turn is active (`has_active_turn`, as `sessions.get_for_view` reads it)."""
    if session["has_active_turn"] or session["usage_turns"] == session["usage_unmeasured"]:
        return None
    return {
        "input_tokens": session["usage_input"],
        "input_tokens_details": {"cached_tokens": session["usage_cached"]},
        "output_tokens": session["usage_output"],
        "output_tokens_details": {"reasoning_tokens": session["usage_reasoning"]},
        "total_tokens": session["usage_total"],
    }


async def queued(q: Queryable, limit: int = 100) -> list[dict[str, Any]]:
    """Queued turns a worker may claim (a paused queued turn waits for its resume)."""
    rows = await q.fetchall(
        "SELECT * FROM turns_full WHERE status = 'queued'"
        " AND (phase IS NULL OR phase != 'paused') ORDER BY id LIMIT ?",
        (limit,),
    )
    return [r for r in (record(row, JSON_COLUMNS) for row in rows) if r is not None]


async def running(q: Queryable) -> list[dict[str, Any]]:
    rows = await q.fetchall("SELECT * FROM turns_full WHERE status IN ('in_progress', 'waiting')")
    return [r for r in (record(row, JSON_COLUMNS) for row in rows) if r is not None]


async def counts(q: Queryable) -> dict[str, int]:
    """How many turns wait for a Runtime (`queued`) and how many one is running or
    holding for a client (`active`: in progress or waiting); how many of them wait for
    a resume (`paused`, each also counted in `queued` or `active` by its status); and
    how many stopped at a checkpoint with no worker, to be continued when a Runtime
    claims them again (`resuming`: after a drain, a lost Runtime or a resume; also
    counted in `active`). One pass over the live turns' partial index (`turns_queue`)."""
    row = await q.fetchone(
        "SELECT count(CASE WHEN status = 'queued' THEN 1 END),"
        " count(CASE WHEN status != 'queued' THEN 1 END),"
        " count(CASE WHEN phase = 'paused' THEN 1 END),"
        " count(CASE WHEN phase = 'resuming' THEN 1 END)"
        " FROM turns WHERE status IN ('queued', 'in_progress', 'waiting')"
    )
    queued, active, paused, resuming = (int(n) for n in row) if row else (0, 0, 0, 0)
    return {"queued": queued, "active": active, "paused": paused, "resuming": resuming}


async def transition(
    tx: Tx,
    turn_id: str,
    expected: tuple[str, ...],
    status: str,
    *,
    fencing_token: str | None = None,
    fields: dict[str, Any] | None = None,
    uncancelled: bool = False,
) -> bool:
    """Compare-and-set: move the turn to `status` only from an `expected` status (and,
    when given, only while it still carries `fencing_token`; when `uncancelled`, only
    while no cancellation of it was requested). Return whether it moved."""
    columns = await turn_rows.stored(tx, fields or {})
    if status in ENDED:
        columns = {**dict.fromkeys(RUNNING_ONLY), **columns}
    sql = _transition_sql(tuple(columns), len(expected), fencing_token is not None, uncancelled)
    args: list[Any] = [status, *columns.values(), turn_id, *expected]
    if fencing_token is not None:
        args.append(fencing_token)
    moved = await tx.execute(sql, args) == 1
    if moved and status in ENDED:
        await _drop_consumed_inputs(tx, turn_id)
    return moved


@functools.lru_cache(maxsize=256)
def _transition_sql(
    columns: tuple[str, ...], expected: int, fenced: bool, uncancelled: bool
) -> str:
    """A transition's UPDATE setting `columns` from one of `expected` statuses (and,
    when `fenced`, only while the turn carries its fencing token; when `uncancelled`,
    only while no cancellation of it was requested)."""
    sets = ", ".join(
        ["status = ?", "state_version = state_version + 1"] + [f"{c} = ?" for c in columns]
    )
    placeholders = ", ".join("?" for _ in range(expected))
    sql = f"UPDATE turns SET {sets} WHERE id = ? AND status IN ({placeholders})"
    sql += " AND cancel_requested_at IS NULL" if uncancelled else ""
    return sql + " AND fencing_token = ?" if fenced else sql


async def _drop_consumed_inputs(tx: Tx, turn_id: str) -> None:
    """An ended turn's inputs admitted without an idempotency key, once consumed (its
    initial input, steering the harness applied), are deleted: nothing can replay them
    and nothing reads them again. Inputs still owed a delivery stay."""
    await tx.execute(
        "DELETE FROM turn_inputs WHERE turn_id = ? AND state IN ('initial', 'applied')"
        " AND idempotency_key IS NULL",
        (turn_id,),
    )


# The usage columns are always all set (`turn_rows.usage_columns`), in their order.
_SET_USAGE = (
    f"UPDATE turns SET {', '.join(f'{column} = ?' for column in turn_rows.USAGE_COLUMNS)}"
    " WHERE id = ? AND fencing_token = ? AND status IN (?, ?)"
)


async def set_usage(tx: Tx, turn_id: str, usage: dict[str, Any], fencing_token: str) -> bool:
    columns = turn_rows.usage_columns(usage)
    changed = await tx.execute(
        _SET_USAGE, (*columns.values(), turn_id, fencing_token, "in_progress", "waiting")
    )
    return changed == 1


async def request_cancel(tx: Tx, turn_id: str, now: int) -> None:
    """Mark the turn's cancellation as requested (the first request's time is kept)."""
    await tx.execute(
        "UPDATE turns SET cancel_requested_at = COALESCE(cancel_requested_at, ?) WHERE id = ?",
        (now, turn_id),
    )


async def previous_created_at(q: Queryable, session_id: str, turn_id: str) -> int | None:
    """When the session's latest turn other than `turn_id` was created, or None."""
    row = await q.fetchone(
        "SELECT MAX(created_at) AS at FROM turns WHERE session_id = ? AND id != ?",
        (session_id, turn_id),
    )
    return None if row is None or row["at"] is None else int(row["at"])
