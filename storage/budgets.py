"""What a session has consumed, for its spend control."""

from __future__ import annotations

from storage.rows import Queryable


async def tokens_used(q: Queryable, session_id: str) -> int:
    """The total tokens of every measured turn of the session (a turn still running
    counts what it has reported so far)."""
    row = await q.fetchone(
        "SELECT COALESCE(SUM(json_extract(usage, '$.total_tokens')), 0) AS used"
        " FROM turns WHERE session_id = ? AND usage IS NOT NULL",
        (session_id,),
    )
    return 0 if row is None else int(row["used"])
