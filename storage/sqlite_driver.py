"""The SQLite driver behind `Database`: one sqlite3 connection to the database file, made
on (and used by) one storage thread only, in WAL mode with the configured `synchronous`
level, foreign keys on and a busy timeout."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from pathlib import Path
from typing import Any, BinaryIO

from storage.errors import StorageError, translate

BUSY_TIMEOUT_MS = 5000
BLOB_CHUNK_BYTES = 256 * 1024


class Driver:
    name = "sqlite"
    begin_sql = "BEGIN IMMEDIATE"
    statement_atomic = True
    errors: tuple[type[Exception], ...] = (sqlite3.Error,)
    integrity_errors: tuple[type[Exception], ...] = (sqlite3.IntegrityError,)
    retry_errors: tuple[type[Exception], ...] = ()

    def __init__(self, path: Path, synchronous: str) -> None:
        conn = sqlite3.connect(path, isolation_level=None)
        conn.row_factory = sqlite3.Row
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute(f"PRAGMA synchronous={synchronous}")
        conn.execute("PRAGMA foreign_keys=ON")
        conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        self.conn = conn

    def execute(self, sql: str, params: Iterable[Any]) -> sqlite3.Cursor:
        return self.conn.execute(sql, tuple(params))

    def insert(self, sql: str, params: Iterable[Any]) -> int:
        rowid = self.conn.execute(sql, tuple(params)).lastrowid
        assert rowid is not None
        return rowid

    def write_blob(self, table: str, column: str, rowid: int, source: BinaryIO) -> None:
        # The row holds a zeroblob of the right size; the content never sits in memory
        # whole.
        with self.conn.blobopen(table, column, rowid) as blob:
            while chunk := source.read(BLOB_CHUNK_BYTES):
                blob.write(chunk)

    def run(self, statement: str) -> None:
        self.conn.execute(statement)

    def lost(self) -> bool:
        return False

    def close(self) -> None:
        self.conn.close()

    @staticmethod
    def translate(exc: BaseException, context: str = "") -> StorageError:
        assert isinstance(exc, sqlite3.Error)
        return translate(exc, context)
