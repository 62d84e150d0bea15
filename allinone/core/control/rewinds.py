"""Rewind: hide a session's last N turns from the model's context, keeping its history.

A rewind is a persisted marker (`storage.rewinds`) naming the turns it hides: the last
`turns` turns the model still sees. Nothing is deleted: the turns and their items stay
listed; the next turn's context is rebuilt without them (orchestration/context.py), and
the session shows them in `x_corebox.hidden_turn_ids`. A session with an active turn
cannot be rewound (409 `turn_conflict`). An `Idempotency-Key` (scoped to the session)
makes a retried rewind answer the marker it made.
"""

from __future__ import annotations

import hashlib
from typing import Any

from allinone.core.errors import IdempotencyConflict, InvalidRequest, NotFound, TurnConflict
from allinone.core.ids import Clock, Ids
from storage import rewinds, sessions, turns
from storage.database import Database, Tx
from storage.rows import Queryable, dumps


def render(marker: dict[str, Any]) -> dict[str, Any]:
    return {
        "object": "x_corebox.rewind",
        "id": marker["id"],
        "session_id": marker["session_id"],
        "turns": marker["turns"],
        "hidden_turn_ids": list(marker["hidden_turn_ids"]),
        "created_at": marker["created_at"],
    }


async def visible_turn_ids(q: Queryable, session_id: str) -> list[str]:
    """The session's turns the model still sees, oldest first."""
    hidden = await rewinds.hidden_turn_ids(q, session_id)
    rows = await q.fetchall(
        "SELECT id FROM turns WHERE session_id = ? ORDER BY created_at, id", (session_id,)
    )
    return [str(row["id"]) for row in rows if row["id"] not in hidden]


class Rewinds:
    def __init__(self, db: Database, ids: Ids, clock: Clock) -> None:
        self._db = db
        self._ids = ids
        self._clock = clock

    async def rewind(
        self, project_id: str, session_id: str, count: int, idempotency_key: str | None = None
    ) -> dict[str, Any]:
        """Hide the session's last `count` visible turns; returns the marker. A repeated
        `idempotency_key` with the same request answers the marker it made and hides
        nothing more; with another request it is an IdempotencyConflict."""
        request = hashlib.sha256(dumps({"turns": count}).encode()).hexdigest()

        async def job(tx: Tx) -> dict[str, Any]:
            if await sessions.get(tx, project_id, session_id) is None:
                raise NotFound(param="session_id")
            if idempotency_key is not None:
                earlier = await rewinds.by_key(tx, session_id, idempotency_key)
                if earlier is not None:
                    if earlier["request_hash"] != request:
                        raise IdempotencyConflict(
                            "This Idempotency-Key was used for another request."
                        )
                    return render(earlier)
            if await turns.active(tx, session_id) is not None:
                raise TurnConflict("The session has an active turn; rewind it once it ends.")
            visible = await visible_turn_ids(tx, session_id)
            if count > len(visible):
                raise InvalidRequest(
                    f"The model sees {len(visible)} turn(s) of this session; "
                    f"{count} cannot be rewound.",
                    "turns",
                )
            marker = {
                "id": self._ids.new("rwd"),
                "session_id": session_id,
                "turns": count,
                "hidden_turn_ids": visible[len(visible) - count :],
                "created_at": self._clock.now(),
            }
            await rewinds.insert(tx, marker, idempotency_key, request)
            return render(marker)

        return await self._db.write(job)
