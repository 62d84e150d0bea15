"""Saved agents, scoped by project."""

from __future__ import annotations

from typing import Any

from storage.database import Tx
from storage.pages import keyset
from storage.rows import Queryable, dumps, record


async def insert(tx: Tx, agent_id: str, project_id: str, config: dict[str, Any], now: int) -> None:
    await tx.execute(
        "INSERT INTO agents (id, project_id, created_at, updated_at, config)"
        " VALUES (?, ?, ?, ?, ?)",
        (agent_id, project_id, now, now, dumps(config)),
    )


async def get(q: Queryable, project_id: str, agent_id: str) -> dict[str, Any] | None:
    row = await q.fetchone(
        "SELECT * FROM agents WHERE project_id = ? AND id = ? AND deleted_at IS NULL",
        (project_id, agent_id),
    )
    return record(row, ("config",))


async def get_for_change(tx: Tx, project_id: str, agent_id: str) -> dict[str, Any] | None:
    """A live agent, read to be changed in this transaction. On PostgreSQL its row stays
    locked until the commit, so another process's change to it waits for this one and
    then reads what this one wrote; on SQLite the single writer already runs one
    transaction at a time."""
    lock = " FOR UPDATE" if tx.backend == "postgresql" else ""
    row = await tx.fetchone(
        "SELECT * FROM agents WHERE project_id = ? AND id = ? AND deleted_at IS NULL" + lock,
        (project_id, agent_id),
    )
    return record(row, ("config",))


async def known(q: Queryable, project_id: str, agent_id: str) -> bool:
    """Whether the project knows `agent_id`: a saved agent of it (deleted ones too, as
    their sessions may still run), or the inline agent of one of its sessions."""
    row = await q.fetchone(
        "SELECT EXISTS (SELECT 1 FROM agents WHERE project_id = ? AND id = ?)"
        " OR EXISTS (SELECT 1 FROM sessions WHERE project_id = ? AND agent_id = ?) AS known",
        (project_id, agent_id, project_id, agent_id),
    )
    return row is not None and bool(row["known"])


async def delete(tx: Tx, project_id: str, agent_id: str, now: int) -> bool:
    """Soft-delete a live agent; False when there is no such agent. Sessions keep their
    frozen copy of its configuration."""
    changed = await tx.execute(
        "UPDATE agents SET deleted_at = ? WHERE project_id = ? AND id = ? AND deleted_at IS NULL",
        (now, project_id, agent_id),
    )
    return changed == 1


async def page(
    q: Queryable, project_id: str, *, after: str | None, limit: int, order: str
) -> tuple[list[dict[str, Any]], bool]:
    """One keyset page of the project's live agents; raises CursorNotFound."""
    rows, more = await keyset(
        q,
        table="agents",
        where="project_id = ? AND deleted_at IS NULL",
        params=(project_id,),
        after=after,
        limit=limit,
        order=order,
    )
    return [r for r in (record(row, ("config",)) for row in rows) if r is not None], more
