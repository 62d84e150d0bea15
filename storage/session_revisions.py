"""Session configuration revisions: revision 1 is written with the session, and every
update writes the next one (never rewriting an earlier revision); the session row holds
the newest, which turns that start afterwards run."""

from __future__ import annotations

from typing import Any

from storage.database import Tx
from storage.rows import Queryable, dumps, record


async def insert(
    tx: Tx,
    session_id: str,
    revision: int,
    agent: dict[str, Any],
    options: dict[str, Any],
    digest: str,
    now: int,
) -> None:
    await tx.execute(
        "INSERT INTO session_revisions (session_id, revision, agent, options, digest,"
        " created_at) VALUES (?, ?, ?, ?, ?, ?)",
        (session_id, revision, dumps(agent), dumps(options), digest, now),
    )


async def copy_all(tx: Tx, from_session_id: str, to_session_id: str) -> int:
    """Copy every revision of one session to another (a fork keeps the history of the
    configuration it pins, under the same revision numbers); the number copied."""
    return await tx.execute(
        "INSERT INTO session_revisions (session_id, revision, agent, options, digest,"
        " created_at) SELECT ?, revision, agent, options, digest, created_at"
        " FROM session_revisions WHERE session_id = ?",
        (to_session_id, from_session_id),
    )


async def next_revision(tx: Tx, session_id: str) -> int:
    """Bump the session's revision counter and return the new revision number."""
    await tx.execute(
        "UPDATE sessions SET config_revision = config_revision + 1 WHERE id = ?", (session_id,)
    )
    row = await tx.fetchone("SELECT config_revision FROM sessions WHERE id = ?", (session_id,))
    assert row is not None
    return int(row["config_revision"])


async def with_digest(q: Queryable, session_id: str, digest: str) -> dict[str, Any] | None:
    """The session's newest revision whose digest is `digest` (None when it has none)."""
    row = await q.fetchone(
        "SELECT * FROM session_revisions WHERE session_id = ? AND digest = ?"
        " ORDER BY revision DESC LIMIT 1",
        (session_id, digest),
    )
    return record(row, ("agent", "options"))


async def listing(q: Queryable, session_id: str) -> list[dict[str, Any]]:
    rows = await q.fetchall(
        "SELECT * FROM session_revisions WHERE session_id = ? ORDER BY revision", (session_id,)
    )
    return [r for r in (record(row, ("agent", "options")) for row in rows) if r is not None]
