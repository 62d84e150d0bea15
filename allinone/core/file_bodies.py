"""The bodies of uploaded files: the one place that writes and reads them.

Bodies live in the `files` row's `content` column today. Everything else (the Files API,
environments that copy an upload into a workspace) goes through `FileBodies`, so moving
bodies to another store changes only this module.

Contract:
- `store(row, source)` copies `source` (a seekable file at its start) into the store in
  chunks, in the same transaction that inserts the file's row; it returns once durable.
- `delete(project_id, file_id)` removes the file's row and body in one transaction.
- `read(project_id, file_id)` is the whole body at once, for callers that copy it.
- `open(project_id, file_id)` opens a reader on the body as committed when it is
  called: a later delete does not cut a download short. The reader yields chunks of at
  most `CHUNK_BYTES` and must be closed (`aclose`, or iterating it to its end). On
  SQLite it reads the blob in place; on PostgreSQL the body is read whole first.
"""

from __future__ import annotations

import asyncio
import io
import sqlite3
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any, BinaryIO

from storage import environments as env_rows
from storage import files as file_rows
from storage.database import Database, Tx
from storage.errors import translate

CHUNK_BYTES = 256 * 1024


class BodyReader:
    """One open body: iterate it for its chunks; `aclose` releases it."""

    def __init__(self, read: Callable[[int], bytes], close: Callable[[], None]) -> None:
        self._read = read
        self._close = close
        self._closed = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            while chunk := await asyncio.to_thread(self._read, CHUNK_BYTES):
                yield chunk
        finally:
            await self.aclose()

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        await asyncio.to_thread(self._close)


class FileBodies:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def store(self, row: dict[str, Any], source: BinaryIO) -> None:
        async def job(tx: Tx) -> None:
            await env_rows.insert_upload_from(tx, row, source)

        await self._db.write(job)

    async def read(self, project_id: str, file_id: str) -> bytes | None:
        """The whole body (for a copy into a workspace), or None when the project has
        no such file."""
        reader = await self.open(project_id, file_id)
        if reader is None:
            return None
        return b"".join([chunk async for chunk in reader])

    async def delete(self, project_id: str, file_id: str) -> bool:
        """Delete the file and its body; False when the project has no such file. A
        download already open reads on to its end."""

        async def job(tx: Tx) -> bool:
            return await file_rows.delete(tx, project_id, file_id)

        return await self._db.write(job)

    async def open(self, project_id: str, file_id: str) -> BodyReader | None:
        """A reader on the file's body, or None when the project has no such file."""
        if self._db.path is None:
            row = await self._db.read(lambda r: env_rows.upload(r, project_id, file_id))
            if row is None:
                return None
            body = io.BytesIO(bytes(row["content"]))
            return BodyReader(body.read, body.close)
        try:
            opened = await asyncio.to_thread(_open, self._db.path, project_id, file_id)
        except sqlite3.Error as exc:
            raise translate(exc) from exc
        if opened is None:
            return None
        conn, blob = opened
        return BodyReader(blob.read, lambda: _close(conn, blob))


def _open(
    path: Path, project_id: str, file_id: str
) -> tuple[sqlite3.Connection, sqlite3.Blob] | None:
    # Its own read-only connection, in one read transaction: the row found and the blob
    # opened are the same snapshot, held for as long as the download lasts without
    # occupying one of the database's shared readers.
    conn = sqlite3.connect(
        f"file:{path}?mode=ro", uri=True, check_same_thread=False, isolation_level=None
    )
    try:
        conn.execute("BEGIN")
        found = conn.execute(
            "SELECT rowid FROM files WHERE project_id = ? AND id = ?", (project_id, file_id)
        ).fetchone()
        if found is None:
            conn.close()
            return None
        return conn, conn.blobopen("files", "content", int(found[0]), readonly=True)
    except BaseException:
        conn.close()
        raise


def _close(conn: sqlite3.Connection, blob: sqlite3.Blob) -> None:
    try:
        blob.close()
    finally:
        conn.close()
