"""The per-session event journal that SSE readers follow.

Events are appended inside the transaction that made the change they describe, with a
per-session sequence; the journal keeps the newest `RETAINED_EVENTS` per session.
"""

from __future__ import annotations

from typing import Any

from storage.database import Tx
from storage.rows import Queryable

RETAINED_EVENTS = 4096


async def append(
    tx: Tx, session_id: str, seq: int, event_id: str, type_: str, payload: str, now: int
) -> None:
    await tx.execute(
        "INSERT INTO session_events (session_id, seq, event_id, type, payload, created_at)"
        " VALUES (?, ?, ?, ?, ?, ?)",
        (session_id, seq, event_id, type_, payload, now),
    )


async def prune(tx: Tx, keep: int = RETAINED_EVENTS) -> int:
    """Keep the newest `keep` events of every session; return how many were deleted.
    A reader that still needed a pruned event gets `stream_interrupted`."""
    return await tx.execute(
        "DELETE FROM session_events WHERE seq <= (SELECT s.event_seq FROM sessions s"
        " WHERE s.id = session_events.session_id) - ?",
        (keep,),
    )


async def after(q: Queryable, session_id: str, seq: int, limit: int = 256) -> list[dict[str, Any]]:
    rows = await q.fetchall(
        "SELECT seq, type, payload FROM session_events WHERE session_id = ? AND seq > ?"
        " ORDER BY seq LIMIT ?",
        (session_id, seq, limit),
    )
    return [dict(row) for row in rows]


async def latest_seq(q: Queryable, session_id: str) -> int:
    row = await q.fetchone("SELECT event_seq FROM sessions WHERE id = ?", (session_id,))
    return 0 if row is None else int(row["event_seq"])
