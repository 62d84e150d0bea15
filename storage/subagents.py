"""Subagents of a session, their turns and their items, keyed by the harness's native
ids within the session (one subagent per native id; one turn per native id within its
subagent; one item per native id within its turn)."""

from __future__ import annotations

from typing import Any

from storage.database import Tx
from storage.rows import Queryable, dumps, record


async def insert(tx: Tx, row: dict[str, Any]) -> None:
    await tx.execute(
        "INSERT INTO subagents (id, session_id, parent_turn_id, parent_agent_id, native_id,"
        " name, instructions, status, opened_at, created_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, 'active', ?, ?)",
        (
            row["id"],
            row["session_id"],
            row["parent_turn_id"],
            row["parent_agent_id"],
            row["native_id"],
            row.get("name"),
            row.get("instructions"),
            row["opened_at"],
            row["created_at"],
        ),
    )


async def by_native(q: Queryable, session_id: str, native_id: str) -> dict[str, Any] | None:
    return record(
        await q.fetchone(
            "SELECT * FROM subagents WHERE session_id = ? AND native_id = ?",
            (session_id, native_id),
        )
    )


async def names(q: Queryable, session_id: str) -> list[str | None]:
    """The name of every subagent of the session (None for one without a name)."""
    found = await q.fetchall("SELECT name FROM subagents WHERE session_id = ?", (session_id,))
    return [row["name"] for row in found]


async def get(q: Queryable, session_id: str, subagent_id: str) -> dict[str, Any] | None:
    return record(
        await q.fetchone(
            "SELECT * FROM subagents WHERE session_id = ? AND id = ?", (session_id, subagent_id)
        )
    )


async def set_status(tx: Tx, subagent_id: str, status: str, closed_at: int | None) -> None:
    await tx.execute(
        "UPDATE subagents SET status = ?, closed_at = ? WHERE id = ?",
        (status, closed_at, subagent_id),
    )


async def turn_by_native(q: Queryable, subagent_id: str, native_id: str) -> dict[str, Any] | None:
    return record(
        await q.fetchone(
            "SELECT * FROM subagent_turns WHERE subagent_id = ? AND native_id = ?",
            (subagent_id, native_id),
        ),
        ("usage",),
    )


async def turn(q: Queryable, subagent_id: str, turn_id: str) -> dict[str, Any] | None:
    return record(
        await q.fetchone(
            "SELECT * FROM subagent_turns WHERE subagent_id = ? AND id = ?", (subagent_id, turn_id)
        ),
        ("usage",),
    )


async def upsert_turn(tx: Tx, row: dict[str, Any]) -> None:
    """Insert the turn, or update its status, times and usage (a later snapshot)."""
    await tx.execute(
        "INSERT INTO subagent_turns (id, subagent_id, session_id, native_id, status,"
        " created_at, started_at, completed_at, usage) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
        " ON CONFLICT (subagent_id, native_id) DO UPDATE SET status = excluded.status,"
        " started_at = excluded.started_at, completed_at = excluded.completed_at,"
        " usage = excluded.usage",
        (
            row["id"],
            row["subagent_id"],
            row["session_id"],
            row["native_id"],
            row["status"],
            row["created_at"],
            row.get("started_at"),
            row.get("completed_at"),
            None if row.get("usage") is None else dumps(row["usage"]),
        ),
    )


async def item_by_native(q: Queryable, turn_id: str, native_id: str) -> dict[str, Any] | None:
    return record(
        await q.fetchone(
            "SELECT * FROM subagent_items WHERE turn_id = ? AND native_id = ?", (turn_id, native_id)
        ),
        ("payload",),
    )


async def upsert_item(tx: Tx, row: dict[str, Any]) -> None:
    """Insert the item, or replace its snapshot."""
    await tx.execute(
        "INSERT INTO subagent_items (id, subagent_id, turn_id, native_id, position, type,"
        " status, payload, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
        " ON CONFLICT (turn_id, native_id) DO UPDATE SET status = excluded.status,"
        " payload = excluded.payload",
        (
            row["id"],
            row["subagent_id"],
            row["turn_id"],
            row["native_id"],
            row["position"],
            row["type"],
            row.get("status"),
            dumps(row["payload"]),
            row["created_at"],
        ),
    )


async def outputs_before(q: Queryable, turn_id: str, position: int) -> int:
    """How many output items (assistant messages) of the turn come before `position`."""
    row = await q.fetchone(
        "SELECT COUNT(*) AS n FROM subagent_items WHERE turn_id = ? AND position < ?"
        " AND json_extract(payload, '$.role') = 'assistant'",
        (turn_id, position),
    )
    return int(row["n"]) if row is not None else 0
