"""Uploaded files: content streamed into a `zeroblob` reads back byte for byte (on both
backends), and schema 11 (content as the last column of `files`) keeps the uploads of an
older SQLite database."""

from __future__ import annotations

import asyncio
import hashlib
import io
import sqlite3
import tracemalloc
from pathlib import Path

from allinone.core.file_bodies import CHUNK_BYTES, FileBodies
from storage import Database, migrations
from storage import environments as env_rows
from storage.database import Tx
from storage.migrations import _statements
from tests.storage.conftest import Target

CONTENT = bytes(range(256)) * 4000 + b"tail"  # spans several chunks


def _row(file_id: str, size: int) -> dict[str, object]:
    return {
        "id": file_id,
        "project_id": "proj_a",
        "filename": "a.bin",
        "purpose": "user_data",
        "bytes": size,
        "sha256": "0" * 64,
        "created_at": 1,
    }


def test_an_upload_streams_into_its_blob_and_reads_back(target: Target) -> None:
    async def main() -> bytes:
        path = target("u.db")
        db = await Database.open(path)
        try:
            await db.write(lambda tx: _insert_project(tx))
            source = io.BytesIO(CONTENT)

            async def job(tx: Tx) -> None:
                await env_rows.insert_upload_from(tx, _row("file_1", len(CONTENT)), source)

            await db.write(job)
            row = await db.read(lambda r: env_rows.upload(r, "proj_a", "file_1"))
            assert row is not None
            return bytes(row["content"])
        finally:
            await db.close()

    assert asyncio.run(main()) == CONTENT


async def _insert_project(tx: Tx) -> None:
    await tx.execute("INSERT INTO projects (id, name, created_at) VALUES ('proj_a', 'a', 1)")


def test_schema_11_keeps_the_uploads_of_an_older_database(tmp_path: Path) -> None:
    """SQLite only: a database file from before schema 11."""
    path = tmp_path / "old.db"
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("CREATE TABLE schema_version (version INTEGER PRIMARY KEY, applied_at INTEGER)")
    for version, sql in migrations.available():
        if version >= 11:
            break
        for statement in _statements(sql):
            conn.execute(statement)
        conn.execute("INSERT INTO schema_version VALUES (?, 0)", (version,))
    conn.execute("INSERT INTO projects (id, name, created_at) VALUES ('proj_a', 'a', 1)")
    conn.execute(
        "INSERT INTO files (id, project_id, filename, purpose, bytes, sha256, content,"
        " created_at) VALUES ('file_old', 'proj_a', 'a.bin', 'user_data', ?, ?, ?, 1)",
        (len(CONTENT), "0" * 64, CONTENT),
    )
    conn.close()

    async def main() -> bytes:
        db = await Database.open(path)
        try:
            row = await db.read(lambda r: env_rows.upload(r, "proj_a", "file_old"))
            assert row is not None
            return bytes(row["content"])
        finally:
            await db.close()

    assert asyncio.run(main()) == CONTENT
    conn = sqlite3.connect(path)
    columns = [r[1] for r in conn.execute("PRAGMA table_info(files)")]
    conn.close()
    assert columns[-1] == "content"


def test_a_download_reads_the_body_in_chunks_to_its_end_after_a_delete(target: Target) -> None:
    """`FileBodies.open` reads a body kept in the database a chunk at a time, never whole
    in memory (on PostgreSQL too, where it is read in a snapshot of its own), and a file
    deleted while its download is open still reads to its end."""
    body = CONTENT * 8  # about 8 MB

    async def main() -> tuple[list[int], str, int]:
        db = await Database.open(target("u.db"))
        try:
            await db.write(lambda tx: _insert_project(tx))
            bodies = FileBodies(db)
            await bodies.store(_row("file_1", len(body)), io.BytesIO(body))
            sizes: list[int] = []
            digest = hashlib.sha256()
            tracemalloc.start()
            try:
                reader = await bodies.open("proj_a", "file_1")
                assert reader is not None
                async for chunk in reader:
                    if not sizes:
                        assert await bodies.delete("proj_a", "file_1")
                    sizes.append(len(chunk))
                    digest.update(chunk)
                    del chunk
                peak = tracemalloc.get_traced_memory()[1]
            finally:
                tracemalloc.stop()
            assert await bodies.open("proj_a", "file_1") is None
            return sizes, digest.hexdigest(), peak
        finally:
            await db.close()

    sizes, digest, peak = asyncio.run(main())
    assert digest == hashlib.sha256(body).hexdigest()
    assert len(sizes) == -(-len(body) // CHUNK_BYTES)
    assert max(sizes) <= CHUNK_BYTES
    assert peak < len(body) // 4, peak


def test_an_expired_file_is_gone_for_every_read_and_collected(target: Target) -> None:
    """From its `expires_at` on, a file is not found, listed, opened or deleted, on both
    backends, and the retention purge removes its row; a file without one stays."""
    from storage import files as file_rows
    from storage import purge

    clock = [999]

    async def main() -> None:
        db = await Database.open(target("u.db"))
        try:
            await db.write(lambda tx: _insert_project(tx))
            bodies = FileBodies(db, now=lambda: clock[0])
            for file_id, expires_at in (("file_kept", None), ("file_a", 1000), ("file_b", 2000)):
                row = {**_row(file_id, 4), "expires_at": expires_at}
                await bodies.store(row, io.BytesIO(b"body"))

            async def found(now: int) -> list[str]:
                rows, _ = await db.read(
                    lambda r: file_rows.page(
                        r, "proj_a", purpose=None, after=None, limit=10, order="asc", now=now
                    )
                )
                return sorted(str(row["id"]) for row in rows)

            assert await found(999) == ["file_a", "file_b", "file_kept"]
            assert await db.read(lambda r: file_rows.get(r, "proj_a", "file_a", 999))
            reader = await bodies.open("proj_a", "file_a")
            assert reader is not None
            assert b"".join([chunk async for chunk in reader]) == b"body"
            clock[0] = 1000
            assert await found(1000) == ["file_b", "file_kept"]
            assert await db.read(lambda r: file_rows.get(r, "proj_a", "file_a", 1000)) is None
            assert await bodies.open("proj_a", "file_a") is None
            assert not await bodies.delete("proj_a", "file_a")
            dry = await db.write(lambda tx: purge.collect(tx, 0, now=1000, dry_run=True))
            done = await db.write(lambda tx: purge.collect(tx, 0, now=1000))
            assert dry.rows == done.rows == {"files": 1}
            left = await db.read(lambda r: r.fetchall("SELECT id FROM files ORDER BY id"))
            assert [row["id"] for row in left] == ["file_b", "file_kept"]
        finally:
            await db.close()

    asyncio.run(main())
