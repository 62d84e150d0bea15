"""Per-role communication events and per-instance receipts.

Events are keyed by (role_id, seq); seq comes from the role's counter and is never
reused. Reads return only events of contacts that have not expired at `now`; message
text is joined from the message row so it is stored once.
"""

from __future__ import annotations

from typing import Any

from storage.database import Tx
from storage.rows import Queryable, dumps, loads


async def append(tx: Tx, row: dict[str, Any]) -> None:
    await tx.execute(
        "INSERT INTO comms_events (role_id, seq, event_id, contact_id, type, direction,"
        " message_id, payload, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            row["role_id"],
            row["seq"],
            row["event_id"],
            row["contact_id"],
            row["type"],
            row["direction"],
            row.get("message_id"),
            dumps(row["payload"]),
            row["created_at"],
        ),
    )


async def page(
    q: Queryable, role_id: str, after: int, limit: int, now: int
) -> tuple[list[dict[str, Any]], bool]:
    """Up to `limit` live events after `after` in seq order, and whether more follow."""
    rows = await q.fetchall(
        "SELECT e.*, c.expires_at AS contact_expires_at, m.text AS message_text,"
        " m.kind AS message_kind FROM comms_events e"
        " JOIN comms_contacts c ON c.id = e.contact_id"
        " LEFT JOIN comms_messages m ON m.id = e.message_id"
        " WHERE e.role_id = ? AND e.seq > ? AND c.expires_at > ? ORDER BY e.seq LIMIT ?",
        (role_id, after, now, limit + 1),
    )
    found = []
    for row in rows[:limit]:
        data = dict(row)
        data["payload"] = loads(data["payload"])
        found.append(data)
    return found, len(rows) > limit


async def expired_after(q: Queryable, role_id: str, after: int, now: int) -> bool:
    """Whether an event after `after` belongs to a contact that has expired but is not yet
    deleted."""
    row = await q.fetchone(
        "SELECT 1 FROM comms_events e JOIN comms_contacts c ON c.id = e.contact_id"
        " WHERE e.role_id = ? AND e.seq > ? AND c.expires_at <= ? LIMIT 1",
        (role_id, after, now),
    )
    return row is not None


async def at(q: Queryable, role_id: str, seq: int) -> dict[str, Any] | None:
    row = await q.fetchone(
        "SELECT * FROM comms_events WHERE role_id = ? AND seq = ?", (role_id, seq)
    )
    return None if row is None else dict(row)


async def insert_receipt(tx: Tx, instance_id: str, seq: int, contact_id: str, now: int) -> bool:
    """Record a receipt; False when this instance had already receipted `seq`."""
    changed = await tx.execute(
        "INSERT INTO comms_receipts (instance_id, seq, contact_id, received_at)"
        " VALUES (?, ?, ?, ?) ON CONFLICT(instance_id, seq) DO NOTHING",
        (instance_id, seq, contact_id, now),
    )
    return changed == 1
