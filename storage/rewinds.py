"""Rewind markers: each hides a session's last turns from the model's context.

History is never deleted: the hidden turns and their items stay readable; a marker only
names the turns the model no longer sees (`hidden_turn_ids`). Hidden turns are the union
over a session's markers.
"""

from __future__ import annotations

from typing import Any

from storage.database import Tx
from storage.rows import Queryable, dumps, loads


async def insert(
    tx: Tx, row: dict[str, Any], idempotency_key: str | None = None, request_hash: str | None = None
) -> None:
    await tx.execute(
        "INSERT INTO session_rewinds (id, session_id, turns, hidden_turn_ids, created_at,"
        " idempotency_key, request_hash) VALUES (?, ?, ?, ?, ?, ?, ?)",
        (
            row["id"],
            row["session_id"],
            row["turns"],
            dumps(row["hidden_turn_ids"]),
            row["created_at"],
            idempotency_key,
            request_hash,
        ),
    )


async def by_key(q: Queryable, session_id: str, idempotency_key: str) -> dict[str, Any] | None:
    """The session's marker made with `idempotency_key` (its `request_hash` beside it)."""
    row = await q.fetchone(
        "SELECT * FROM session_rewinds WHERE session_id = ? AND idempotency_key = ?",
        (session_id, idempotency_key),
    )
    if row is None:
        return None
    marker = dict(row)
    marker["hidden_turn_ids"] = loads(marker["hidden_turn_ids"])
    return marker


async def of_session(q: Queryable, session_id: str) -> list[dict[str, Any]]:
    """The session's markers, oldest first."""
    rows = await q.fetchall(
        "SELECT * FROM session_rewinds WHERE session_id = ? ORDER BY created_at, id",
        (session_id,),
    )
    markers = []
    for row in rows:
        marker = dict(row)
        marker["hidden_turn_ids"] = loads(marker["hidden_turn_ids"])
        markers.append(marker)
    return markers


async def hidden_turn_ids(q: Queryable, session_id: str) -> set[str]:
    return {
        turn for marker in await of_session(q, session_id) for turn in marker["hidden_turn_ids"]
    }


async def any_since(q: Queryable, session_id: str, since: int) -> bool:
    """Whether a marker was made at or after `since` (seconds)."""
    row = await q.fetchone(
        "SELECT 1 FROM session_rewinds WHERE session_id = ? AND created_at >= ? LIMIT 1",
        (session_id, since),
    )
    return row is not None
