"""Immutable agent versions, named deployment pointers and their audit trail.

A version row is written once and never changed. A pointer row moves only by
compare-and-set on its `pointer_version`, which every move increments.
"""

from __future__ import annotations

from typing import Any

from storage.database import Tx
from storage.rows import Queryable, dumps, record


async def insert_version(
    tx: Tx,
    agent_id: str,
    project_id: str,
    number: int,
    config: dict[str, Any],
    digest: str,
    actor: str | None,
    now: int,
) -> None:
    await tx.execute(
        "INSERT INTO agent_versions (agent_id, number, project_id, config, digest, actor,"
        " created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
        (agent_id, number, project_id, dumps(config), digest, actor, now),
    )


async def get_version(q: Queryable, agent_id: str, number: int) -> dict[str, Any] | None:
    row = await q.fetchone(
        "SELECT * FROM agent_versions WHERE agent_id = ? AND number = ?", (agent_id, number)
    )
    return record(row, ("config",))


async def page_versions(
    q: Queryable, agent_id: str, *, after: int | None, limit: int, order: str
) -> tuple[list[dict[str, Any]], bool]:
    """One page of an agent's versions by number; `after` is a version number."""
    descending = order == "desc"
    sql = "SELECT * FROM agent_versions WHERE agent_id = ?"
    args: list[Any] = [agent_id]
    if after is not None:
        sql += " AND number < ?" if descending else " AND number > ?"
        args.append(after)
    sql += f" ORDER BY number {'DESC' if descending else 'ASC'} LIMIT ?"
    args.append(limit + 1)
    rows = [r for r in (record(row, ("config",)) for row in await q.fetchall(sql, args)) if r]
    return rows[:limit], len(rows) > limit


async def set_agent_version(
    tx: Tx, project_id: str, agent_id: str, version: int, config: dict[str, Any], now: int
) -> bool:
    """Make `version` the agent's current one, only if it follows the stored one."""
    changed = await tx.execute(
        "UPDATE agents SET config = ?, updated_at = ?, version = ?"
        " WHERE project_id = ? AND id = ? AND deleted_at IS NULL AND version = ?",
        (dumps(config), now, version, project_id, agent_id, version - 1),
    )
    return changed == 1


async def deployments(q: Queryable, agent_id: str) -> list[dict[str, Any]]:
    rows = await q.fetchall(
        "SELECT * FROM agent_deployments WHERE agent_id = ? ORDER BY name", (agent_id,)
    )
    return [dict(row) for row in rows]


async def deployment(q: Queryable, agent_id: str, name: str) -> dict[str, Any] | None:
    row = await q.fetchone(
        "SELECT * FROM agent_deployments WHERE agent_id = ? AND name = ?", (agent_id, name)
    )
    return dict(row) if row is not None else None


async def move_deployment(
    tx: Tx, agent_id: str, name: str, version: int, expected: int | None, now: int
) -> int | None:
    """Point `name` at `version` (creating the pointer at 1 when it does not exist and
    nothing was expected); the new pointer version, or None when `expected` is stale."""
    current = await deployment(tx, agent_id, name)
    if current is None:
        if expected not in (None, 0):
            return None
        await tx.execute(
            "INSERT INTO agent_deployments (agent_id, name, version, pointer_version,"
            " updated_at) VALUES (?, ?, ?, 1, ?)",
            (agent_id, name, version, now),
        )
        return 1
    if expected is not None and expected != current["pointer_version"]:
        return None
    changed = await tx.execute(
        "UPDATE agent_deployments SET version = ?, pointer_version = pointer_version + 1,"
        " updated_at = ? WHERE agent_id = ? AND name = ? AND pointer_version = ?",
        (version, now, agent_id, name, current["pointer_version"]),
    )
    return int(current["pointer_version"]) + 1 if changed == 1 else None


async def audit(tx: Tx, entry: dict[str, Any]) -> None:
    await tx.execute(
        "INSERT INTO agent_audit (id, project_id, agent_id, action, deployment, from_version,"
        " to_version, pointer_version, actor, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            entry["id"],
            entry["project_id"],
            entry["agent_id"],
            entry["action"],
            entry.get("deployment"),
            entry.get("from_version"),
            entry["to_version"],
            entry.get("pointer_version"),
            entry.get("actor"),
            entry["created_at"],
        ),
    )


async def previous_version(q: Queryable, agent_id: str, name: str) -> int | None:
    """The version the pointer held before its latest move, or None when it never moved."""
    row = await q.fetchone(
        "SELECT from_version FROM agent_audit WHERE agent_id = ? AND deployment = ?"
        " AND from_version IS NOT NULL ORDER BY created_at DESC, id DESC LIMIT 1",
        (agent_id, name),
    )
    return None if row is None else int(row["from_version"])


async def audit_page(q: Queryable, agent_id: str, limit: int) -> list[dict[str, Any]]:
    rows = await q.fetchall(
        "SELECT * FROM agent_audit WHERE agent_id = ? ORDER BY created_at DESC, id DESC LIMIT ?",
        (agent_id, limit),
    )
    return [dict(row) for row in rows]
