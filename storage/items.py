"""Session items, ordered by a per-session position.

On SQLite an item's payload is stored as its JSON deflated against the journal's preset
dictionary (`storage.journal_dictionary`, a BLOB) when that is smaller, as the JSON text
otherwise (and in rows written before that form); PostgreSQL keeps the JSON text (its
own storage compresses large values). `decoded` gives the row with its payload as a
dict, whichever way it was stored.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from storage.database import Tx
from storage.journal_dictionary import pack, unpack
from storage.rows import Queryable, as_dict, dumps, loads


async def insert(tx: Tx, row: dict[str, Any]) -> int:
    """Insert an item at the next position of its session; return that position. On a
    database several Core processes share, the session's row is held first (a no-op
    update locks it until commit), so concurrent transactions take positions one after
    the other instead of the same one."""
    if tx.backend != "sqlite":
        await tx.execute(
            "UPDATE sessions SET event_seq = event_seq WHERE id = ?", (row["session_id"],)
        )
    found = await tx.fetchone(
        "SELECT COALESCE(MAX(position), 0) + 1 AS next FROM items WHERE session_id = ?",
        (row["session_id"],),
    )
    assert found is not None
    position = int(found["next"])
    await tx.execute(
        "INSERT INTO items (id, session_id, turn_id, position, created_at, type, status,"
        " output_index, native_id, payload) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            row["id"],
            row["session_id"],
            row["turn_id"],
            position,
            row["created_at"],
            row["type"],
            row.get("status"),
            row.get("output_index"),
            row.get("native_id"),
            stored_payload(tx, row["payload"]),
        ),
    )
    return position


async def update(tx: Tx, item_id: str, status: str | None, payload: dict[str, Any]) -> None:
    await tx.execute(
        "UPDATE items SET status = ?, payload = ? WHERE id = ?",
        (status, stored_payload(tx, payload), item_id),
    )


def stored_payload(q: Queryable, payload: dict[str, Any]) -> str | bytes:
    """An item's payload in its stored form on `q`'s backend."""
    text = dumps(payload)
    return pack(text) if q.backend == "sqlite" else text


def payload_text(stored: str | bytes) -> str:
    """An item's payload JSON from its stored form."""
    return unpack(stored)


def decoded(row: sqlite3.Row | None) -> dict[str, Any] | None:
    """An item row as a dict, its payload decoded."""
    if row is None:
        return None
    data = as_dict(row)
    data["payload"] = loads(unpack(data["payload"]))
    return data


async def by_native_id(q: Queryable, turn_id: str, native_id: str) -> dict[str, Any] | None:
    row = await q.fetchone(
        "SELECT * FROM items WHERE turn_id = ? AND native_id = ?", (turn_id, native_id)
    )
    return decoded(row)


async def unfinished(q: Queryable, turn_id: str) -> list[dict[str, Any]]:
    rows = await q.fetchall(
        "SELECT * FROM items WHERE turn_id = ? AND status = 'in_progress' ORDER BY position",
        (turn_id,),
    )
    return [r for r in (decoded(row) for row in rows) if r is not None]


async def count_outputs(q: Queryable, turn_id: str) -> int:
    row = await q.fetchone(
        "SELECT COUNT(*) AS n FROM items WHERE turn_id = ? AND output_index IS NOT NULL",
        (turn_id,),
    )
    return 0 if row is None else int(row["n"])


async def get(q: Queryable, item_id: str) -> dict[str, Any] | None:
    row = await q.fetchone("SELECT * FROM items WHERE id = ?", (item_id,))
    return decoded(row)


async def of_session_before(q: Queryable, session_id: str, turn_id: str) -> list[dict[str, Any]]:
    """The session's items outside `turn_id`, in position order (the committed history a
    turn's model context is rebuilt from)."""
    rows = await q.fetchall(
        "SELECT * FROM items WHERE session_id = ? AND turn_id != ? ORDER BY position",
        (session_id, turn_id),
    )
    return [r for r in (decoded(row) for row in rows) if r is not None]


async def of_turn(q: Queryable, turn_id: str) -> list[dict[str, Any]]:
    """Every item of the turn, in session order."""
    rows = await q.fetchall("SELECT * FROM items WHERE turn_id = ? ORDER BY position", (turn_id,))
    return [r for r in (decoded(row) for row in rows) if r is not None]
