"""The bodies of uploaded files: the one place that writes and reads them.

With a blob store (`storage.blobs`, the SQLite data directory's `blobs/`), a body is a
content-addressed file there that the `files` row names by sha256 (`blob`); without
one, and for every body written before the store held them, it is the row's `content`
column. Everything else (the Files API, environments that copy an upload into a
workspace) goes through `FileBodies`, so where bodies live changes only this module.
A blob no row names any more is removed by the next collection (`corebox gc`, the
retention job), so two files with the same body share one blob.

Contract:
- `store(row, source)` copies `source` (a seekable file at its start) into the store in
  chunks and inserts the file's row; it returns once both are durable (the blob is
  fsynced, and its directory, before the row that names it commits).
- `delete(project_id, file_id)` removes the file's row and body in one transaction.
- `read(project_id, file_id)` is the whole body at once, for callers that copy it.
- `open(project_id, file_id)` opens a reader on the body as committed when it is
  called: a later delete does not cut a download short. The reader yields chunks of at
  most `CHUNK_BYTES` and must be closed (`aclose`, or iterating it to its end). On
  SQLite it reads the blob in place; on PostgreSQL it reads the column a chunk at a
  time, in a snapshot of its own: on either, the body never sits in memory whole.
"""

from __future__ import annotations

import asyncio
import errno
import sqlite3
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any, BinaryIO

from allinone.core.ids import Clock
from storage import environments as env_rows
from storage import files as file_rows
from storage.blobs import BlobStore
from storage.database import Database, Tx
from storage.errors import StorageError, StorageUnavailable, translate

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
    def __init__(
        self, db: Database, blobs: BlobStore | None = None, now: Callable[[], int] | None = None
    ) -> None:
        self._db = db
        self._blobs = blobs
        self._now = now or Clock().now

    async def store(self, row: dict[str, Any], source: BinaryIO) -> None:
        blobs = self._blobs
        if blobs is None:

            async def in_database(tx: Tx) -> None:
                await env_rows.insert_upload_from(tx, row, source)

            await self._db.write(in_database)
            return
        start = source.tell()
        await asyncio.to_thread(_put, blobs, row["sha256"], source)

        async def naming_the_blob(tx: Tx) -> None:
            # Checked under the writer's lock: a collection that ran since the blob was
            # written (nothing named it yet) may have removed it; write it again.
            if not blobs.path(row["sha256"]).is_file():
                source.seek(start)
                _put(blobs, row["sha256"], source)
            await file_rows.insert_with_blob(tx, row)

        await self._db.write(naming_the_blob)

    async def read(self, project_id: str, file_id: str) -> bytes | None:
        """The whole body (for a copy into a workspace), or None when the project has
        no such file."""
        reader = await self.open(project_id, file_id)
        if reader is None:
            return None
        return b"".join([chunk async for chunk in reader])

    async def delete(self, project_id: str, file_id: str) -> bool:
        """Delete the file and its body; False when the project has no such file (or it
        expired). A download already open reads on to its end."""
        now = self._now()

        async def job(tx: Tx) -> bool:
            return await file_rows.delete(tx, project_id, file_id, now)

        return await self._db.write(job)

    async def open(self, project_id: str, file_id: str) -> BodyReader | None:
        """A reader on the file's body, or None when the project has no such file (or it
        expired)."""
        wanted = (project_id, file_id, self._now())
        if self._db.url is not None:
            return await asyncio.to_thread(_open_pg, self._db.url, self._blobs, wanted)
        assert self._db.path is not None
        try:
            return await asyncio.to_thread(_open, self._db.path, self._blobs, wanted)
        except sqlite3.Error as exc:
            raise translate(exc) from exc


def _put(blobs: BlobStore, sha256: str, source: BinaryIO) -> None:
    try:
        blobs.put_from(sha256, source)
    except OSError as exc:
        reason = "disk_full" if exc.errno == errno.ENOSPC else "io_error"
        raise StorageUnavailable(f"writing a file body: {exc}", reason) from exc


# The body's row, by project, file id and the time it must not have expired at.
FIND = f"SELECT rowid, blob FROM files WHERE project_id = ? AND id = ? AND {file_rows.LIVE}"


def _open(path: Path, blobs: BlobStore | None, wanted: tuple[str, str, int]) -> BodyReader | None:
    # Its own read-only connection, in one read transaction: the row found and the body
    # opened are the same snapshot, held for as long as a body in the database is read
    # without occupying one of the database's shared readers. A body in the blob store
    # is an open file, readable to its end whatever happens to the row meanwhile.
    conn = sqlite3.connect(
        f"file:{path}?mode=ro", uri=True, check_same_thread=False, isolation_level=None
    )
    try:
        conn.execute("BEGIN")
        found = conn.execute(FIND, wanted).fetchone()
        if found is None:
            conn.close()
            return None
        if found[1] is not None:
            conn.close()
            return _blob_reader(blobs, str(found[1]))
        blob = conn.blobopen("files", "content", int(found[0]), readonly=True)
    except BaseException:
        conn.close()
        raise

    def close() -> None:
        try:
            blob.close()
        finally:
            conn.close()

    return BodyReader(blob.read, close)


def _open_pg(url: str, blobs: BlobStore | None, wanted: tuple[str, str, int]) -> BodyReader | None:
    # As `_open`: a connection of its own in one snapshot, the row found and the body
    # read in chunks from the same one. The driver is imported here, where a PostgreSQL
    # database is read: a server on SQLite never loads it.
    from storage import postgres

    try:
        snapshot = postgres.Snapshot(url)
    except postgres.Driver.errors as exc:
        raise postgres.translate(exc) from exc
    try:
        found = snapshot.fetchone(FIND, wanted)
        if found is None or found[1] is not None:
            snapshot.close()
            return None if found is None else _blob_reader(blobs, str(found[1]))
        read = snapshot.chunks("files", "content", int(found[0]))
    except postgres.Driver.errors as exc:
        snapshot.close()
        raise postgres.translate(exc) from exc
    except BaseException:
        snapshot.close()
        raise
    return BodyReader(read, snapshot.close)


def _blob_reader(blobs: BlobStore | None, sha256: str) -> BodyReader:
    if blobs is None:
        raise StorageError("a file body is in the blob store, and there is none")
    try:
        handle = blobs.open(sha256)
    except OSError as exc:
        raise StorageError(f"the blob of a file body cannot be read: {exc}") from exc
    return BodyReader(handle.read, handle.close)
