"""Uploaded files: content streamed into a `zeroblob` reads back byte for byte (on both
backends), and schema 11 (content as the last column of `files`) keeps the uploads of an
older SQLite database."""

from __future__ import annotations

import asyncio
import io
import sqlite3
from pathlib import Path

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
