"""Contacts between two roles, their messages, message idempotency records, and the
retention sweep that deletes everything tied to a contact once it has expired.

State changes are compare-and-set on the current state; the allowed transitions are
decided by the caller (allinone.core.comms.states).
"""

from __future__ import annotations

from typing import Any

from storage.database import Tx
from storage.rows import Queryable, dumps, record


async def insert(tx: Tx, row: dict[str, Any]) -> None:
    await tx.execute(
        "INSERT INTO comms_contacts (id, opener_role_id, recipient_role_id, state, reply_limit,"
        " created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
        (
            row["id"],
            row["opener_role_id"],
            row["recipient_role_id"],
            row["state"],
            row["reply_limit"],
            row["created_at"],
            row["expires_at"],
        ),
    )


async def get(q: Queryable, contact_id: str) -> dict[str, Any] | None:
    return record(await q.fetchone("SELECT * FROM comms_contacts WHERE id = ?", (contact_id,)))


async def transition(
    tx: Tx, contact_id: str, current: str, target: str, fields: dict[str, Any]
) -> bool:
    """Move the contact from `current` to `target`, setting `fields`; False if it moved."""
    names = "".join(f", {name} = ?" for name in fields)  # names are fixed by the caller
    changed = await tx.execute(
        f"UPDATE comms_contacts SET state = ?{names} WHERE id = ? AND state = ?",
        (target, *fields.values(), contact_id, current),
    )
    return changed == 1


async def count_reply(tx: Tx, contact_id: str, used: int) -> bool:
    """Add one reply if the count is still `used` and below the limit."""
    changed = await tx.execute(
        "UPDATE comms_contacts SET replies_used = replies_used + 1"
        " WHERE id = ? AND replies_used = ? AND replies_used < reply_limit",
        (contact_id, used),
    )
    return changed == 1


async def insert_message(tx: Tx, row: dict[str, Any]) -> None:
    await tx.execute(
        "INSERT INTO comms_messages (id, contact_id, sender_role_id, kind, text, created_at,"
        " recipient_seq) VALUES (?, ?, ?, ?, ?, ?, ?)",
        (
            row["id"],
            row["contact_id"],
            row["sender_role_id"],
            row["kind"],
            row["text"],
            row["created_at"],
            row["recipient_seq"],
        ),
    )


async def latest_message_from(
    q: Queryable, contact_id: str, sender_role_id: str
) -> dict[str, Any] | None:
    row = await q.fetchone(
        "SELECT * FROM comms_messages WHERE contact_id = ? AND sender_role_id = ?"
        " ORDER BY recipient_seq DESC LIMIT 1",
        (contact_id, sender_role_id),
    )
    return record(row)


async def mark_received(tx: Tx, message_id: str, now: int) -> None:
    await tx.execute(
        "UPDATE comms_messages SET received_at = COALESCE(received_at, ?) WHERE id = ?",
        (now, message_id),
    )


async def idempotent_result(q: Queryable, role_id: str, key: str) -> dict[str, Any] | None:
    row = await q.fetchone(
        "SELECT * FROM comms_idempotency WHERE role_id = ? AND key = ?", (role_id, key)
    )
    return record(row, ("response",))


async def remember(
    tx: Tx,
    role_id: str,
    key: str,
    request_hash: str,
    contact_id: str,
    response: dict[str, Any],
    now: int,
) -> None:
    await tx.execute(
        "INSERT INTO comms_idempotency (role_id, key, request_hash, contact_id, response,"
        " created_at) VALUES (?, ?, ?, ?, ?, ?)",
        (role_id, key, request_hash, contact_id, dumps(response), now),
    )


async def expired(q: Queryable, now: int, limit: int) -> list[str]:
    rows = await q.fetchall(
        "SELECT id FROM comms_contacts WHERE expires_at <= ? ORDER BY expires_at, id LIMIT ?",
        (now, limit),
    )
    return [str(row["id"]) for row in rows]


async def delete_contact(tx: Tx, contact_id: str) -> list[tuple[str, int]]:
    """Delete a contact and everything tied to it; return (role_id, highest deleted seq)
    for every role stream that lost events, so the caller can record the gap."""
    rows = await tx.fetchall(
        "SELECT role_id, MAX(seq) AS seq FROM comms_events WHERE contact_id = ? GROUP BY role_id",
        (contact_id,),
    )
    for table in (
        "comms_receipts",
        "comms_events",
        "comms_messages",
        "comms_idempotency",
        "comms_claims",
        "comms_retired_leases",
    ):
        await tx.execute(f"DELETE FROM {table} WHERE contact_id = ?", (contact_id,))
    await tx.execute("DELETE FROM comms_contacts WHERE id = ?", (contact_id,))
    return [(str(row["role_id"]), int(row["seq"])) for row in rows]


async def project_contacts(q: Queryable, project_id: str, limit: int) -> list[dict[str, Any]]:
    """Contacts one of whose two roles belongs to the project, newest first."""
    rows = await q.fetchall(
        "SELECT c.* FROM comms_contacts c WHERE EXISTS (SELECT 1 FROM comms_roles r"
        " WHERE r.project_id = ? AND r.id IN (c.opener_role_id, c.recipient_role_id))"
        " ORDER BY c.created_at DESC, c.id DESC LIMIT ?",
        (project_id, limit),
    )
    return [r for r in (record(row) for row in rows) if r is not None]


async def messages(q: Queryable, contact_id: str) -> list[dict[str, Any]]:
    rows = await q.fetchall(
        "SELECT * FROM comms_messages WHERE contact_id = ? ORDER BY created_at, id",
        (contact_id,),
    )
    return [r for r in (record(row) for row in rows) if r is not None]
