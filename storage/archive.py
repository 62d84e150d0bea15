"""Archiving: a resource stays readable but takes no new input (`archived_at` set)."""

from __future__ import annotations

from storage.database import Tx

# The archivable tables, each with the condition a live (not deleted) row meets.
ARCHIVABLE = {
    "sessions": "deleted_at IS NULL",
    "agents": "deleted_at IS NULL",
    "environments": "1 = 1",
}


async def set_archived(
    tx: Tx, table: str, project_id: str, resource_id: str, archived_at: int | None
) -> bool:
    """Archive (`archived_at` a time) or restore (None) a live row of the project; False
    when there is no such row. Archiving an archived row keeps its first time."""
    live = ARCHIVABLE[table]
    value = "COALESCE(archived_at, ?)" if archived_at is not None else "?"
    changed = await tx.execute(
        f"UPDATE {table} SET archived_at = {value} WHERE project_id = ? AND id = ? AND {live}",
        (archived_at, project_id, resource_id),
    )
    return changed == 1


async def has_active_turn(tx: Tx, session_id: str) -> bool:
    row = await tx.fetchone(
        "SELECT 1 FROM turns WHERE session_id = ? AND status IN ('queued', 'in_progress',"
        " 'waiting') LIMIT 1",
        (session_id,),
    )
    return row is not None
