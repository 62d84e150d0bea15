"""Control commands (pause, resume, cancel) as resources (seed 003).

A command is written `accepted` (or already `rejected`) in the transaction that checked
it, and moves once to `applied`, `rejected` or `expired` when the change it asked for
happened, or could not. The idempotency key is unique per session and acting key.
"""

from __future__ import annotations

from typing import Any

from storage.database import Tx
from storage.pages import keyset
from storage.rows import Queryable

OPEN = "accepted"


async def insert(tx: Tx, row: dict[str, Any]) -> None:
    columns = ", ".join(row)
    marks = ", ".join("?" for _ in row)
    await tx.execute(f"INSERT INTO commands ({columns}) VALUES ({marks})", tuple(row.values()))


async def get(q: Queryable, command_id: str) -> dict[str, Any] | None:
    row = await q.fetchone("SELECT * FROM commands WHERE id = ?", (command_id,))
    return None if row is None else dict(row)


async def by_key(
    q: Queryable, session_id: str, actor: str, idempotency_key: str
) -> dict[str, Any] | None:
    row = await q.fetchone(
        "SELECT * FROM commands WHERE session_id = ? AND actor = ? AND idempotency_key = ?",
        (session_id, actor, idempotency_key),
    )
    return None if row is None else dict(row)


async def page(
    q: Queryable, session_id: str, after: str | None, limit: int
) -> tuple[list[dict[str, Any]], bool]:
    """Commands of a session, oldest first, keyset on (created_at, id); raises
    CursorNotFound for an `after` that is not one of them."""
    rows, more = await keyset(
        q,
        table="commands",
        where="session_id = ?",
        params=(session_id,),
        after=after,
        limit=limit,
        order="asc",
    )
    return [dict(row) for row in rows], more


async def settle(
    tx: Tx, turn_id: str, action: str, status: str, reason: str | None, now: int
) -> list[str]:
    """Move the turn's open commands of `action` to `status`; the ids moved. A command
    keeps the reason it was given unless `reason` (why it was rejected) replaces it."""
    rows = await tx.fetchall(
        "SELECT id FROM commands WHERE turn_id = ? AND action = ? AND status = 'accepted'",
        (turn_id, action),
    )
    ids = [str(row["id"]) for row in rows]
    for command_id in ids:
        await tx.execute(
            "UPDATE commands SET status = ?, reason = COALESCE(?, reason), updated_at = ?"
            " WHERE id = ? AND status = 'accepted'",
            (status, reason, now, command_id),
        )
    return ids


async def settle_one(tx: Tx, command_id: str, status: str, reason: str | None, now: int) -> bool:
    changed = await tx.execute(
        "UPDATE commands SET status = ?, reason = COALESCE(?, reason), updated_at = ?"
        " WHERE id = ? AND status = 'accepted'",
        (status, reason, now, command_id),
    )
    return changed == 1


async def open_pauses(q: Queryable, turn_id: str) -> list[str]:
    """The actions (`pause`, `resume`) of the turn's open pause and resume commands,
    newest first."""
    rows = await q.fetchall(
        "SELECT action FROM commands WHERE turn_id = ? AND status = 'accepted'"
        " AND action IN ('pause', 'resume') ORDER BY created_at DESC, id DESC",
        (turn_id,),
    )
    return [str(row["action"]) for row in rows]


async def settle_terminal(tx: Tx, turn_id: str, status: str, now: int) -> None:
    """The turn ended with `status`: an open cancel is applied when it ended cancelled;
    every other open command `expired` (it was accepted, and its turn ended before it
    applied), its reason naming how the turn ended (`turn_completed`, `turn_failed`,
    `turn_cancelled`)."""
    rows = await tx.fetchall(
        "SELECT id, action FROM commands WHERE turn_id = ? AND status = 'accepted'"
        " AND action IN ('pause', 'resume', 'cancel')",
        (turn_id,),
    )  # one read for the three actions; usually nothing is open
    for row in rows:
        if status == "cancelled" and row["action"] == "cancel":
            await settle_one(tx, str(row["id"]), "applied", None, now)
        else:
            await settle_one(tx, str(row["id"]), "expired", f"turn_{status}", now)
