"""Archiving sessions, agents and environments (seed 003: `active -> archived ->
deleted`). An archived resource stays readable; a session takes no new input, an agent
and an environment start no new session (each refused with 409 and a code of its own:
`session_archived`, `agent_archived`, `environment_archived`). Restoring makes it active
again. A session is archived only while it has no active turn.
"""

from __future__ import annotations

from typing import Any

from allinone.core.errors import Conflict, NotFound, TurnConflict
from allinone.core.ids import Clock
from storage import archive
from storage.database import Database, Tx

KINDS = {"sessions": "session", "agents": "agent", "environments": "environment"}


def refuse_archived(kind: str, row: dict[str, Any] | None) -> None:
    """Raise the 409 for an archived `kind` ("session", "agent", "environment")."""
    if row is not None and row.get("archived_at") is not None:
        raise Conflict(
            f"The {kind} is archived: it is readable but takes no new work.",
            code=f"{kind}_archived",
        )


class Archive:
    def __init__(self, db: Database, clock: Clock) -> None:
        self._db = db
        self._clock = clock

    async def change(self, table: str, project_id: str, resource_id: str, archived: bool) -> int:
        """Archive or restore one resource; return its `archived_at` (0 once restored)."""
        now = self._clock.now() if archived else None

        async def job(tx: Tx) -> int:
            if archived and table == "sessions" and await archive.has_active_turn(tx, resource_id):
                raise TurnConflict("A session with an active turn cannot be archived.")
            if not await archive.set_archived(tx, table, project_id, resource_id, now):
                raise NotFound()
            row = await tx.fetchone(f"SELECT archived_at FROM {table} WHERE id = ?", (resource_id,))
            return 0 if row is None or row["archived_at"] is None else int(row["archived_at"])

        return await self._db.write(job)
