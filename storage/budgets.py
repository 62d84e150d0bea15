"""What a session has consumed, for its spend control."""

from __future__ import annotations

from typing import Any

from storage.rows import Queryable, loads


async def tokens_used(q: Queryable, session_id: str) -> tuple[int, int, int]:
    """(input, output, total) tokens of every measured turn of the session (a turn still
    running counts what it has reported so far). Whole numbers, summed exactly on both
    backends."""
    row = await q.fetchone(
        "SELECT COALESCE(SUM(CAST(json_extract(usage, '$.input_tokens') AS INTEGER)), 0) AS input,"
        " COALESCE(SUM(CAST(json_extract(usage, '$.output_tokens') AS INTEGER)), 0) AS output,"
        " COALESCE(SUM(CAST(json_extract(usage, '$.total_tokens') AS INTEGER)), 0) AS total"
        " FROM turns_full WHERE session_id = ? AND usage IS NOT NULL",
        (session_id,),
    )
    if row is None:
        return 0, 0, 0
    return int(row["input"]), int(row["output"]), int(row["total"])


async def options_now(q: Queryable, session_id: str) -> dict[str, Any]:
    """The session's options as they stand in the database now (a `spend_control`
    changed since a turn started included); {} for a session that is gone."""
    row = await q.fetchone("SELECT options FROM sessions WHERE id = ?", (session_id,))
    options = loads(row["options"]) if row is not None else None
    return options if isinstance(options, dict) else {}
