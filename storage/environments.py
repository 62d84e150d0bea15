"""Environments, the files written into them, uploaded files and captured artifacts."""

from __future__ import annotations

from typing import Any, BinaryIO

from storage.blobs import BlobStore
from storage.database import Tx
from storage.rows import Queryable, dumps, record

JSON_COLUMNS = ("config", "secrets", "setup")


async def insert(tx: Tx, row: dict[str, Any]) -> None:
    """Insert one environment; `row["owner"]` is `session` (made by a session for itself,
    purged with the last session that uses it) or `project` (`environments.create`)."""
    await tx.execute(
        "INSERT INTO environments (id, project_id, wire_id, type, status, config, secrets,"
        " workspace_directory, created_at, idempotency_key, request_hash, owner)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            row["id"],
            row["project_id"],
            row["wire_id"],
            row["type"],
            row["status"],
            dumps(row["config"]),
            dumps(row.get("secrets") or {}),
            row.get("workspace_directory"),
            row["created_at"],
            row.get("idempotency_key"),
            row.get("request_hash"),
            row["owner"],
        ),
    )


async def get(q: Queryable, project_id: str, environment_id: str) -> dict[str, Any] | None:
    row = await q.fetchone(
        "SELECT * FROM environments WHERE project_id = ? AND id = ?", (project_id, environment_id)
    )
    return record(row, JSON_COLUMNS)


async def get_any(q: Queryable, environment_id: str) -> dict[str, Any] | None:
    row = await q.fetchone("SELECT * FROM environments WHERE id = ?", (environment_id,))
    return record(row, JSON_COLUMNS)


async def by_idempotency_key(q: Queryable, project_id: str, key: str) -> dict[str, Any] | None:
    row = await q.fetchone(
        "SELECT * FROM environments WHERE project_id = ? AND idempotency_key = ?", (project_id, key)
    )
    return record(row, JSON_COLUMNS)


async def set_initialization(
    tx: Tx, environment_id: str, initialization: str, status: str, failure: str | None = None
) -> None:
    await tx.execute(
        "UPDATE environments SET initialization = ?, status = ?, failure = ? WHERE id = ?",
        (initialization, status, failure, environment_id),
    )


async def set_setup(tx: Tx, environment_id: str, setup: dict[str, Any]) -> None:
    """Record where the environment's set-up stands (the latest step replaces the last)."""
    await tx.execute(
        "UPDATE environments SET setup = ? WHERE id = ?", (dumps(setup), environment_id)
    )


async def waiting_sessions(q: Queryable, environment_id: str) -> list[tuple[str, str]]:
    """(session id, its first queued turn id) of each session of the environment that has
    a turn waiting (for its set-up, among others)."""
    rows = await q.fetchall(
        "SELECT s.id AS session_id, (SELECT t.id FROM turns t WHERE t.session_id = s.id"
        " AND t.status = 'queued' ORDER BY t.id LIMIT 1) AS turn_id"
        " FROM sessions s WHERE s.environment_id = ? ORDER BY s.id",
        (environment_id,),
    )
    return [(row["session_id"], row["turn_id"]) for row in rows if row["turn_id"]]


async def fail_running_initializations(tx: Tx, failure: str) -> int:
    """Every initialization still `running` ends `failed` with `failure`; returns how many."""
    return await tx.execute(
        "UPDATE environments SET initialization = 'failed', status = 'failed', failure = ?"
        " WHERE initialization = 'running'",
        (failure,),
    )


async def reserve_file(tx: Tx, row: dict[str, Any]) -> None:
    """Insert a `reserved` file write; `row["prior"]` is what it found at its path
    (`pending` until Core has looked; None for an environment's initial files)."""
    await tx.execute(
        "INSERT INTO environment_files (id, environment_id, path, type, file_id, size_bytes,"
        " sha256, state, created_at, reserved_by, prior)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, 'reserved', ?, ?, ?)",
        (
            row["id"],
            row["environment_id"],
            row["path"],
            row["type"],
            row.get("file_id"),
            row["size_bytes"],
            row["sha256"],
            row["created_at"],
            row.get("reserved_by"),
            row.get("prior"),
        ),
    )


async def set_prior(tx: Tx, file_row_id: str, prior: str) -> bool:
    """Record what a reserved write found at its path, if it is still `reserved` with
    its prior state `pending` (compare-and-set: a settlement that dropped it as never
    begun wins). Returns whether it was recorded; the write may begin only if so."""
    changed = await tx.execute(
        "UPDATE environment_files SET prior = ?"
        " WHERE id = ? AND state = 'reserved' AND prior = 'pending'",
        (prior, file_row_id),
    )
    return changed > 0


async def set_file_state(tx: Tx, file_row_id: str, state: str) -> None:
    await tx.execute("UPDATE environment_files SET state = ? WHERE id = ?", (state, file_row_id))


async def drop_reservation(tx: Tx, file_row_id: str) -> None:
    """Forget a reserved file write the workspace definitely refused (or that never
    began): nothing was written, so nothing is kept."""
    await tx.execute(
        "DELETE FROM environment_files WHERE id = ? AND state = 'reserved'", (file_row_id,)
    )


async def unsettled_rows(q: Queryable, environment_id: str) -> list[dict[str, Any]]:
    """The environment's file writes still `reserved` or `unknown`, oldest first."""
    rows = await q.fetchall(
        "SELECT id, path, state, size_bytes, sha256, created_at, reserved_by, prior"
        " FROM environment_files"
        " WHERE environment_id = ? AND state IN ('reserved', 'unknown') ORDER BY created_at, id",
        (environment_id,),
    )
    return [dict(row) for row in rows]


async def settle_file(
    tx: Tx, file_row_id: str, was: str, written: bool, pending: bool = False
) -> bool:
    """Settle an unsettled write still in state `was` (compare-and-set; with `pending`,
    also still without its prior state, so never begun): mark it `written`, the latest
    file at its path, or forget it when it did not happen. Returns whether this call
    settled it."""
    if written:
        return await mark_written(tx, file_row_id, was)
    never_begun = " AND prior = 'pending'" if pending else ""
    changed = await tx.execute(
        "DELETE FROM environment_files WHERE id = ? AND state = ?" + never_begun,
        (file_row_id, was),
    )
    return changed > 0


async def mark_written(tx: Tx, file_row_id: str, was: str) -> bool:
    """Mark the write `file_row_id`, still in state `was`, `written` (compare-and-set);
    the written row it replaces at its path, if any, is forgotten in the same
    transaction. Returns whether this call marked it."""
    row = await tx.fetchone(
        "SELECT environment_id, path FROM environment_files WHERE id = ? AND state = ?",
        (file_row_id, was),
    )
    if row is None:
        return False
    await tx.execute(
        "DELETE FROM environment_files WHERE environment_id = ? AND path = ? AND state = 'written'",
        (row["environment_id"], row["path"]),
    )
    changed = await tx.execute(
        "UPDATE environment_files SET state = 'written' WHERE id = ? AND state = ?",
        (file_row_id, was),
    )
    return changed > 0


async def files_of(q: Queryable, environment_id: str) -> list[dict[str, Any]]:
    """Files reserved or written into the environment, for its public description: one
    per path (a written file a write in flight replaces is left out)."""
    rows = await q.fetchall(
        "SELECT * FROM environment_files f WHERE environment_id = ?"
        " AND (state = 'reserved' OR (state = 'written' AND NOT EXISTS ("
        "SELECT 1 FROM environment_files r WHERE r.environment_id = f.environment_id"
        " AND r.path = f.path AND r.state = 'reserved')))"
        " ORDER BY created_at, path",
        (environment_id,),
    )
    return [dict(row) for row in rows]


async def written_files(q: Queryable, environment_id: str) -> list[dict[str, Any]]:
    rows = await q.fetchall(
        "SELECT * FROM environment_files WHERE environment_id = ? AND state = 'written'"
        " ORDER BY created_at, path",
        (environment_id,),
    )
    return [dict(row) for row in rows]


async def insert_upload_from(tx: Tx, row: dict[str, Any], source: BinaryIO) -> None:
    """Insert an upload whose `row["bytes"]` bytes of content are read from `source`
    (at its current position) in chunks, never held in memory whole."""
    rowid = await tx.insert(
        # `content` is the table's last column, so the zeroblob is not materialised.
        "INSERT INTO files (id, project_id, filename, purpose, bytes, sha256, created_at,"
        " expires_at, content) VALUES (?, ?, ?, ?, ?, ?, ?, ?, zeroblob(?))",
        (
            row["id"],
            row["project_id"],
            row["filename"],
            row["purpose"],
            row["bytes"],
            row["sha256"],
            row["created_at"],
            row.get("expires_at"),
            row["bytes"],
        ),
    )
    await tx.write_blob("files", "content", rowid, source)


async def upload(q: Queryable, project_id: str, file_id: str) -> dict[str, Any] | None:
    row = await q.fetchone(
        "SELECT * FROM files WHERE project_id = ? AND id = ?", (project_id, file_id)
    )
    return None if row is None else dict(row)


async def insert_artifact(tx: Tx, row: dict[str, Any], blobs: BlobStore | None = None) -> None:
    """Record an artifact. A body the blob store `holds` goes there (the caller has
    usually `put` it already; `ensure` writes it again if a collection removed it) and
    the row references it by sha256."""
    content: bytes = row["content"]
    blob = None
    if blobs is not None and blobs.holds(len(content)):
        blobs.ensure(row["sha256"], content)
        blob, content = row["sha256"], b""
    await tx.execute(
        "INSERT INTO artifacts (id, session_id, turn_id, environment_id, path, size_bytes,"
        " sha256, content, created_at, blob) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            row["id"],
            row["session_id"],
            row["turn_id"],
            row["environment_id"],
            row["path"],
            row["size_bytes"],
            row["sha256"],
            content,
            row["created_at"],
            blob,
        ),
    )


async def latest_artifact_digest(q: Queryable, environment_id: str, path: str) -> str | None:
    """The digest of the latest artifact captured at `path` in the environment by any of
    its sessions, deleted or not: content that digest names is no new output."""
    row = await q.fetchone(
        "SELECT sha256 FROM artifacts WHERE environment_id = ? AND path = ?"
        " ORDER BY created_at DESC, id DESC LIMIT 1",
        (environment_id, path),
    )
    return None if row is None else str(row["sha256"])


async def artifact(q: Queryable, session_id: str, artifact_id: str) -> dict[str, Any] | None:
    row = await q.fetchone(
        "SELECT * FROM artifacts WHERE session_id = ? AND id = ? AND deleted_at IS NULL",
        (session_id, artifact_id),
    )
    return None if row is None else dict(row)


async def delete_artifact(tx: Tx, artifact_id: str, now: int) -> None:
    await tx.execute(
        "UPDATE artifacts SET deleted_at = ?, content = ? WHERE id = ?", (now, b"", artifact_id)
    )
