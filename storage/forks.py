"""Copying a session's rows into a new session (a fork).

Rows are copied column by column as stored, so a column a later migration adds is
carried along; the caller names only what changes (`overrides`). Nothing here decides
what is copied: `allinone.core.control.forks` does.
"""

from __future__ import annotations

from typing import Any

from storage.database import Tx
from storage.rows import DERIVED, Queryable

_SUBAGENT_TABLES = ("subagents", "subagent_turns", "subagent_items")


async def raw(q: Queryable, table: str, row_id: str) -> dict[str, Any] | None:
    """One row of `table` (`sessions`, `turns`, `items` or `environments`) as stored."""
    if table not in ("sessions", "turns", "items", "environments"):
        raise ValueError(table)
    row = await q.fetchone(f"SELECT * FROM {table} WHERE id = ?", (row_id,))
    return None if row is None else dict(row)


_COPIED = ("sessions", "turns", "items", "environments", *_SUBAGENT_TABLES)


async def copy(tx: Tx, table: str, row: dict[str, Any], overrides: dict[str, Any]) -> None:
    """Insert a copy of the stored `row` into `table` with `overrides` applied (columns
    the database derives are left to it)."""
    if table not in _COPIED:
        raise ValueError(table)
    derived = DERIVED.get(table, frozenset())
    values = {k: v for k, v in {**row, **overrides}.items() if k not in derived}
    columns = ", ".join(values)
    marks = ", ".join("?" for _ in values)
    await tx.execute(
        f"INSERT INTO {table} ({columns}) VALUES ({marks})",
        tuple(values.values()),
    )


async def turns_through(
    q: Queryable, session_id: str, turn: dict[str, Any]
) -> list[dict[str, Any]]:
    """The session's stored turns up to and including `turn`, oldest first."""
    rows = await q.fetchall(
        "SELECT * FROM turns WHERE session_id = ? AND (created_at < ? OR"
        " (created_at = ? AND id <= ?)) ORDER BY created_at, id",
        (session_id, turn["created_at"], turn["created_at"], turn["id"]),
    )
    return [dict(row) for row in rows]


async def items_through(q: Queryable, session_id: str, position: int) -> list[dict[str, Any]]:
    """The session's stored items at or before `position`, in order."""
    rows = await q.fetchall(
        "SELECT * FROM items WHERE session_id = ? AND position <= ? ORDER BY position",
        (session_id, position),
    )
    return [dict(row) for row in rows]


async def subagents_of(q: Queryable, session_id: str) -> list[dict[str, Any]]:
    """The session's stored subagents, in the order they were opened."""
    rows = await q.fetchall(
        "SELECT * FROM subagents WHERE session_id = ? ORDER BY created_at, id", (session_id,)
    )
    return [dict(row) for row in rows]


async def subagent_rows(q: Queryable, table: str, subagent_id: str) -> list[dict[str, Any]]:
    """A subagent's stored turns (`subagent_turns`) or items (`subagent_items`), in the
    order they were made."""
    if table not in _SUBAGENT_TABLES[1:]:
        raise ValueError(table)
    rows = await q.fetchall(
        f"SELECT * FROM {table} WHERE subagent_id = ? ORDER BY created_at, id", (subagent_id,)
    )
    return [dict(row) for row in rows]


async def last_position(q: Queryable, turn_id: str) -> int | None:
    row = await q.fetchone("SELECT MAX(position) AS p FROM items WHERE turn_id = ?", (turn_id,))
    return None if row is None or row["p"] is None else int(row["p"])


async def latest_finished_turn(q: Queryable, session_id: str) -> dict[str, Any] | None:
    row = await q.fetchone(
        "SELECT * FROM turns WHERE session_id = ? AND status IN ('completed', 'failed',"
        " 'cancelled') ORDER BY created_at DESC, id DESC LIMIT 1",
        (session_id,),
    )
    return None if row is None else dict(row)


async def recent_snapshots(q: Queryable, environment_id: str, limit: int) -> list[str]:
    """The ids of the `limit` most recent turns (over every session bound to the
    environment) whose end left a workspace snapshot, newest first."""
    rows = await q.fetchall(
        "SELECT turns.workspace_snapshot AS s FROM turns JOIN sessions"
        " ON sessions.id = turns.session_id WHERE sessions.environment_id = ?"
        " AND turns.workspace_snapshot IS NOT NULL ORDER BY turns.workspace_snapshot DESC"
        " LIMIT ?",
        (environment_id, limit),
    )
    return [str(row["s"]) for row in rows]
