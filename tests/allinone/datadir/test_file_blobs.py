"""Uploaded file bodies live in the blob store: read back byte for byte, shared by files
with the same body, kept while any file names them and removed by `corebox gc` once
none does (`--dry-run` only lists); a body an earlier release kept in the database
still reads."""

from __future__ import annotations

import asyncio
import hashlib
import io
import json
import os
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest
from openai import OpenAI

from allinone.core.file_bodies import FileBodies
from storage import Database
from storage.blobs import BlobStore
from tests.allinone.datadir.test_gc import blob_names, corebox, own_server
from tests.conftest import API_KEY, Server

__all__ = ["own_server"]

BODY = os.urandom(300_000)


def _contents(data_dir: Path) -> list[tuple[str | None, int]]:
    with closing(sqlite3.connect(f"file:{data_dir / 'corebox.db'}?mode=ro", uri=True)) as db:
        return list(db.execute("SELECT blob, length(content) FROM files ORDER BY id"))


def test_file_bodies_are_blobs_collected_once_no_file_names_them(
    own_server: Server, request: pytest.FixtureRequest
) -> None:
    client = OpenAI(base_url=own_server.base_url + "/v1", api_key=API_KEY, max_retries=0)
    request.addfinalizer(client.close)
    data_dir = own_server.data_dir
    digest = hashlib.sha256(BODY).hexdigest()
    first = client.files.create(file=("a.bin", io.BytesIO(BODY)), purpose="user_data")
    second = client.files.create(file=("b.bin", io.BytesIO(BODY)), purpose="user_data")
    assert blob_names(data_dir) == {digest}
    assert _contents(data_dir) == [(digest, 0), (digest, 0)]  # no body in the database
    assert client.files.content(second.id).read() == BODY

    client.files.delete(first.id)
    kept = corebox(data_dir, "gc", "--retention-days", "0")
    assert kept.returncode == 0, kept.stderr
    assert blob_names(data_dir) == {digest}  # the second file still names it
    assert client.files.content(second.id).read() == BODY

    client.files.delete(second.id)
    figures = corebox(data_dir, "storage", "--json")
    assert figures.returncode == 0, figures.stderr
    assert json.loads(figures.stdout)["reclaimable_bytes"] >= len(BODY)  # a blob no row names
    dry = corebox(data_dir, "gc", "--dry-run", "--retention-days", "0")
    assert dry.returncode == 0 and " 1 blobs" in dry.stdout, dry.stdout
    assert blob_names(data_dir) == {digest}
    done = corebox(data_dir, "gc", "--retention-days", "0")
    assert done.returncode == 0, done.stderr
    assert blob_names(data_dir) == set()


def test_a_body_kept_in_the_database_still_reads(tmp_path: Path) -> None:
    digest = hashlib.sha256(BODY).hexdigest()

    async def main() -> tuple[bytes | None, bytes | None]:
        db = await Database.open(tmp_path / "corebox.db")
        try:
            await db.write(
                lambda tx: tx.execute(
                    "INSERT INTO projects (id, name, created_at) VALUES ('proj_a', 'a', 1)"
                )
            )
            row = {
                "project_id": "proj_a",
                "filename": "a.bin",
                "purpose": "user_data",
                "bytes": len(BODY),
                "sha256": digest,
                "created_at": 1,
            }
            # Written as a build without a blob store writes it, then read by one with.
            await FileBodies(db).store({**row, "id": "file_old"}, io.BytesIO(BODY))
            bodies = FileBodies(db, BlobStore(tmp_path / "blobs"))
            await bodies.store({**row, "id": "file_new"}, io.BytesIO(BODY))
            return await bodies.read("proj_a", "file_old"), await bodies.read("proj_a", "file_new")
        finally:
            await db.close()

    old, new = asyncio.run(main())
    assert old == BODY and new == BODY
    assert _contents(tmp_path) == [(digest, 0), (None, len(BODY))]
