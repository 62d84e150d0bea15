"""Environment templates, scoped by project.

`config` holds what may be shown (JSON); the confidential inputs (environment variables,
setup commands, inline file and capability data) are stored only as the sealed bytes the
caller hands in.
"""

from __future__ import annotations

from typing import Any

from storage.database import Tx
from storage.pages import keyset
from storage.rows import Queryable, dumps, record

JSON_COLUMNS = ("config",)


async def insert(tx: Tx, row: dict[str, Any], sealed: bytes) -> None:
    await tx.execute(
        "INSERT INTO environment_templates (id, project_id, name, config, sealed_confidential,"
        " created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
        (
            row["id"],
            row["project_id"],
            row["name"],
            dumps(row["config"]),
            sealed,
            row["created_at"],
            row["created_at"],
        ),
    )


async def get(q: Queryable, project_id: str, template_id: str) -> dict[str, Any] | None:
    """A live template of the project, with its sealed confidential part."""
    row = await q.fetchone(
        "SELECT * FROM environment_templates"
        " WHERE project_id = ? AND id = ? AND deleted_at IS NULL",
        (project_id, template_id),
    )
    return record(row, JSON_COLUMNS)


async def update(
    tx: Tx,
    project_id: str,
    template_id: str,
    *,
    name: str | None,
    config: dict[str, Any],
    sealed: bytes,
    now: int,
) -> bool:
    changed = await tx.execute(
        "UPDATE environment_templates SET name = ?, config = ?, sealed_confidential = ?,"
        " updated_at = ? WHERE project_id = ? AND id = ? AND deleted_at IS NULL",
        (name, dumps(config), sealed, now, project_id, template_id),
    )
    return changed == 1


async def delete(tx: Tx, project_id: str, template_id: str, now: int) -> bool:
    changed = await tx.execute(
        "UPDATE environment_templates SET deleted_at = ?"
        " WHERE project_id = ? AND id = ? AND deleted_at IS NULL",
        (now, project_id, template_id),
    )
    return changed == 1


async def page(
    q: Queryable, project_id: str, *, after: str | None, limit: int, order: str
) -> tuple[list[dict[str, Any]], bool]:
    rows, more = await keyset(
        q,
        table="environment_templates",
        where="project_id = ? AND deleted_at IS NULL",
        params=(project_id,),
        after=after,
        limit=limit,
        order=order,
    )
    return [r for r in (record(row, JSON_COLUMNS) for row in rows) if r is not None], more
