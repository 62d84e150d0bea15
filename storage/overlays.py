"""Safety overlays: versioned rows that are written once and cleared, never edited.

Each overlay takes the next value of a durable counter as its version, so any change to
the set of active overlays (a new one, or one cleared, which also takes a version) is
visible as a higher number.
"""

from __future__ import annotations

from typing import Any

from storage import tenancy
from storage.database import Tx
from storage.rows import Queryable, dumps, record

VERSION_COUNTER = "overlay_version"


async def insert(tx: Tx, row: dict[str, Any]) -> int:
    """Insert an overlay; its version."""
    version = await tenancy.next_counter(tx, VERSION_COUNTER)
    await tx.execute(
        "INSERT INTO overlays (id, version, project_id, agent_id, kind, value, reason, actor,"
        " created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            row["id"],
            version,
            row["project_id"],
            row.get("agent_id"),
            row["kind"],
            dumps(row["value"]),
            row["reason"],
            row["actor"],
            row["created_at"],
        ),
    )
    return version


async def clear(tx: Tx, overlay_id: str, actor: str, now: int) -> bool:
    """Clear an active overlay; False when there is no such active overlay."""
    changed = await tx.execute(
        "UPDATE overlays SET cleared_at = ?, cleared_by = ? WHERE id = ? AND cleared_at IS NULL",
        (now, actor, overlay_id),
    )
    if changed == 1:
        await tenancy.next_counter(tx, VERSION_COUNTER)
    return changed == 1


async def get(q: Queryable, overlay_id: str) -> dict[str, Any] | None:
    row = await q.fetchone("SELECT * FROM overlays WHERE id = ?", (overlay_id,))
    return record(row, ("value",))


async def active(
    q: Queryable, project_id: str | None = None, agent_id: str | None = None
) -> list[dict[str, Any]]:
    """Active overlays, oldest first: all of them, or those applying to a project (and,
    given an agent, those of the whole project plus that agent's)."""
    sql = "SELECT * FROM overlays WHERE cleared_at IS NULL"
    args: list[Any] = []
    if project_id is not None:
        sql += " AND project_id = ?"
        args.append(project_id)
        if agent_id is not None:
            sql += " AND (agent_id IS NULL OR agent_id = ?)"
            args.append(agent_id)
        else:
            sql += " AND agent_id IS NULL"
    rows = await q.fetchall(sql + " ORDER BY version", args)
    return [r for r in (record(row, ("value",)) for row in rows) if r is not None]


async def history(q: Queryable, limit: int) -> list[dict[str, Any]]:
    rows = await q.fetchall("SELECT * FROM overlays ORDER BY version DESC LIMIT ?", (limit,))
    return [r for r in (record(row, ("value",)) for row in rows) if r is not None]


def _active_turns(project_id: str, agent_id: str | None) -> tuple[str, list[Any]]:
    """The query of the active turns (`t`) of a project's sessions (`s`), of one agent's
    when given, and its arguments; a caller may add conditions."""
    sql = (
        "SELECT t.id AS turn_id, t.session_id, t.status"
        " FROM turns t JOIN sessions s ON s.id = t.session_id"
        " WHERE s.project_id = ? AND t.status IN ('queued', 'in_progress', 'waiting')"
    )
    if agent_id is None:
        return sql, [project_id]
    return sql + " AND s.agent_id = ?", [project_id, agent_id]


async def active_turns(q: Queryable, project_id: str, agent_id: str | None) -> list[dict[str, Any]]:
    """(session_id, turn_id, status) of every active turn of the project's sessions (of
    one agent)."""
    sql, args = _active_turns(project_id, agent_id)
    return [dict(row) for row in await q.fetchall(sql, args)]


async def paused_by(q: Queryable, overlay: dict[str, Any]) -> list[dict[str, Any]]:
    """(session_id, turn_id, status) of the active turns of the overlay's scope that stand
    paused, or on their way to it, by the pause command the kill switch `overlay` sent
    them (actor `kill_switch`, idempotency key `pause_key`): that command is the turn's
    latest pause to take effect, so a turn paused again by someone else since is not
    among them."""
    sql, args = _active_turns(overlay["project_id"], overlay["agent_id"])
    sql += (
        " AND t.phase IN ('paused', 'pause_requested', 'pausing')"
        " AND (SELECT c.actor || ' ' || COALESCE(c.idempotency_key, '') FROM commands c"
        " WHERE c.session_id = t.session_id AND c.turn_id = t.id AND c.action = 'pause'"
        " AND c.status IN ('accepted', 'applied') ORDER BY c.created_at DESC, c.id DESC LIMIT 1)"
        " = 'kill_switch ' || ? || '/' || t.id"
    )
    return [dict(row) for row in await q.fetchall(sql, [*args, overlay["id"]])]


def pause_key(overlay_id: str, turn_id: str) -> str:
    """The idempotency key of the pause command a kill switch sends a turn."""
    return f"{overlay_id}/{turn_id}"
