"""Run manifests: what each turn actually ran, kept as JSON on its row."""

from __future__ import annotations

from typing import Any

from storage.database import Tx
from storage.rows import Queryable, dumps, loads


async def get(q: Queryable, turn_id: str) -> dict[str, Any] | None:
    row = await q.fetchone("SELECT manifest FROM turns WHERE id = ?", (turn_id,))
    return None if row is None or row["manifest"] is None else dict(loads(row["manifest"]))


async def put(tx: Tx, turn_id: str, manifest: dict[str, Any]) -> None:
    await tx.execute("UPDATE turns SET manifest = ? WHERE id = ?", (dumps(manifest), turn_id))


async def previous(q: Queryable, session_id: str, turn_id: str) -> dict[str, Any] | None:
    """The manifest of the session's latest other turn that reported a tool digest."""
    row = await q.fetchone(
        "SELECT manifest FROM turns WHERE session_id = ? AND id != ? AND manifest IS NOT NULL"
        " AND json_extract(manifest, '$.tools_digest') IS NOT NULL"
        " ORDER BY created_at DESC, id DESC LIMIT 1",
        (session_id, turn_id),
    )
    return None if row is None else dict(loads(row["manifest"]))
