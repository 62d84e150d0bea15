"""Uploaded files (`/v1/files`): their descriptions, pages of them, and deletion.

A file whose `expires_at` has come is gone for every read here (given `now`), and the
retention job removes its row (`storage.purge`).

The content column is never selected here: bodies are written and read in chunks by
`allinone.core.file_bodies` (in `content`, or in the blob store named by `blob`), so a
listing or a retrieve never loads a body.
"""

from __future__ import annotations

from typing import Any

from storage.database import Tx
from storage.pages import CursorNotFound
from storage.rows import Queryable

# Every column but `content` and `blob`.
COLUMNS = (
    "rowid AS body_rowid, id, project_id, filename, purpose, bytes, sha256, created_at, expires_at"
)
# The condition that a file has not expired at `?` (its one parameter).
LIVE = "(expires_at IS NULL OR expires_at > ?)"


async def insert_with_blob(tx: Tx, row: dict[str, Any]) -> None:
    """Insert a file whose body is the blob store's blob `row["sha256"]`, already
    written durably (`allinone.core.file_bodies`)."""
    await tx.execute(
        "INSERT INTO files (id, project_id, filename, purpose, bytes, sha256, created_at,"
        " blob, content, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, X'', ?)",
        (
            row["id"],
            row["project_id"],
            row["filename"],
            row["purpose"],
            row["bytes"],
            row["sha256"],
            row["created_at"],
            row["sha256"],
            row.get("expires_at"),
        ),
    )


async def get(q: Queryable, project_id: str, file_id: str, now: int) -> dict[str, Any] | None:
    """The file, unless the project has no such file or it expired at or before `now`."""
    row = await q.fetchone(
        f"SELECT {COLUMNS} FROM files WHERE project_id = ? AND id = ? AND {LIVE}",
        (project_id, file_id, now),
    )
    return None if row is None else dict(row)


async def page(
    q: Queryable,
    project_id: str,
    *,
    purpose: str | None,
    after: str | None,
    limit: int,
    order: str,
    now: int,
) -> tuple[list[dict[str, Any]], bool]:
    """Up to `limit` files of the project not expired at `now` (only `purpose` ones when
    given), keyset-paged on `(created_at, id)` after the file `after`, and whether more
    follow."""
    clauses = ["project_id = ?", LIVE]
    args: list[Any] = [project_id, now]
    if purpose is not None:
        clauses.append("purpose = ?")
        args.append(purpose)
    if after is not None:
        anchor = await get(q, project_id, after, now)
        if anchor is None:
            raise CursorNotFound(after)
        clauses.append("(created_at, id) " + (">" if order == "asc" else "<") + " (?, ?)")
        args += [anchor["created_at"], anchor["id"]]
    direction = "ASC" if order == "asc" else "DESC"
    rows = await q.fetchall(
        f"SELECT {COLUMNS} FROM files WHERE {' AND '.join(clauses)}"
        f" ORDER BY created_at {direction}, id {direction} LIMIT ?",
        (*args, limit + 1),
    )
    return [dict(row) for row in rows[:limit]], len(rows) > limit


async def delete(tx: Tx, project_id: str, file_id: str, now: int) -> bool:
    """Delete the file and its body; False when the project has no such file or it
    expired at or before `now` (the retention job removes it)."""
    changed = await tx.execute(
        f"DELETE FROM files WHERE project_id = ? AND id = ? AND {LIVE}",
        (project_id, file_id, now),
    )
    return changed > 0
