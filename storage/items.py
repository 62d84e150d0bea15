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

# The next position of a session and the next output index of a turn, as the scalar
# subqueries of an item's INSERT (one statement, whose RETURNING gives both).
_NEXT_POSITION = "(SELECT COALESCE(MAX(position), 0) + 1 FROM items WHERE session_id = ?)"
_NEXT_OUTPUT = "(SELECT COUNT(*) FROM items WHERE turn_id = ? AND output_index IS NOT NULL)"
_INSERT = (
    "INSERT INTO items (id, session_id, turn_id, position, created_at, type, status,"
    " output_index, native_id, payload) VALUES (?, ?, ?, {position}, ?, ?, ?, {output}, ?, ?)"
    " RETURNING position, output_index"
)
_INSERT_ITEM = _INSERT.format(position=_NEXT_POSITION, output="?")
_INSERT_OUTPUT = _INSERT.format(position=_NEXT_POSITION, output=_NEXT_OUTPUT)


async def insert(tx: Tx, row: dict[str, Any], *, output: bool = False) -> tuple[int, int | None]:
    """Insert an item at the next position of its session; return that position and its
    output index: when `output`, the turn's next one (how many of its items have one),
    else `row`'s. On a database several Core processes share, the session's row is held
    first (a no-op update locks it until commit), so concurrent transactions take
    positions one after the other instead of the same one."""
    if tx.backend != "sqlite":
        await tx.execute(
            "UPDATE sessions SET event_seq = event_seq WHERE id = ?", (row["session_id"],)
        )
    output_index = (row["turn_id"],) if output else (row.get("output_index"),)
    rows = await tx.fetchall(
        _INSERT_OUTPUT if output else _INSERT_ITEM,
        (
            row["id"],
            row["session_id"],
            row["turn_id"],
            row["session_id"],
            row["created_at"],
            row["type"],
            row.get("status"),
            *output_index,
            row.get("native_id"),
            stored_payload(tx, row["payload"]),
        ),
    )
    stored = rows[0]
    index = stored["output_index"]
    return int(stored["position"]), None if index is None else int(index)


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
