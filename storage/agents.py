"""Saved agents, scoped by project."""

from __future__ import annotations

from typing import Any

from storage.database import Tx
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
