"""The database a test's server keeps its state in, read or changed from outside it, on
either backend.

`start_server` (tests/conftest.py) records the PostgreSQL URL of each server it starts on
PostgreSQL (`remember`); `location(data_dir)` is that URL, or the SQLite file in the data
directory. `Raw`/`raw(location)` is a plain connection taking the storage package's `?`
SQL on both backends; `stored_bytes(data_dir)` is everything the database holds, as bytes
to search (the SQLite files themselves, or every value of every row on PostgreSQL).
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import psycopg

from storage import postgres, urls

DATABASE_FILE = "corebox.db"
_URLS: dict[Path, str] = {}


def remember(data_dir: Path, url: str) -> None:
    _URLS[data_dir.resolve()] = url


def url(data_dir: Path) -> str | None:
    """The PostgreSQL database a server on `data_dir` was started on, if any."""
    return _URLS.get(data_dir.resolve())


def location(data_dir: Path) -> Path | str:
    """The server's database: its PostgreSQL URL, or the SQLite file."""
    return _URLS.get(data_dir.resolve()) or data_dir / DATABASE_FILE


class Raw:
    """A plain connection to a test database, outside `Database` (to set up a state or to
    check one), in autocommit mode, taking the storage package's `?` SQL on both
    backends."""

    def __init__(self, where: Path | str, *, read_only: bool = False) -> None:
        self._pg: psycopg.Connection[postgres.Row] | None = None
        self._lite: sqlite3.Connection | None = None
        self.backend = "postgresql" if urls.is_url(where) else "sqlite"
        if urls.is_url(where):
            self._pg = postgres.connect(str(where))
        else:
            uri = f"file:{where}" + ("?mode=ro" if read_only else "")
            self._lite = sqlite3.connect(uri, uri=True, isolation_level=None)
            self._lite.row_factory = sqlite3.Row

    def execute(self, sql: str, params: Iterable[Any] = ()) -> list[Any]:
        if self._pg is not None:
            cursor = self._pg.execute(postgres.convert(sql), tuple(params))
            return list(cursor.fetchall()) if cursor.description else []
        assert self._lite is not None
        return self._lite.execute(sql, tuple(params)).fetchall()

    def tables(self) -> list[str]:
        if self._pg is not None:
            sql = (
                "SELECT table_name AS name FROM information_schema.tables"
                " WHERE table_schema = current_schema() ORDER BY table_name"
            )
        else:
            sql = "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"
        return [str(row["name"]) for row in self.execute(sql)]

    def version(self) -> object:
        """A value that changes whenever another connection commits a write."""
        if self._pg is not None:
            return self.execute("SELECT CAST(pg_current_wal_insert_lsn() AS TEXT) AS v")[0][0]
        return self.execute("PRAGMA data_version")[0][0]

    def close(self) -> None:
        if self._pg is not None:
            self._pg.close()
        if self._lite is not None:
            self._lite.close()


@contextlib.contextmanager
def raw(where: Path | str, *, read_only: bool = False) -> Iterator[Raw]:
    conn = Raw(where, read_only=read_only)
    try:
        yield conn
    finally:
        conn.close()


def stored_bytes(data_dir: Path) -> bytes:
    """Everything the server's database holds, to search for what must not be there."""
    where = location(data_dir)
    if not urls.is_url(where):
        return b"".join(
            path.read_bytes() for path in data_dir.iterdir() if path.name.startswith(DATABASE_FILE)
        )
    parts: list[bytes] = []
    with raw(where) as conn:
        for table in conn.tables():
            for row in conn.execute(f'SELECT * FROM "{table}"'):
                for value in row:
                    if isinstance(value, bytes):
                        parts.append(value)
                    elif value is not None:
                        parts.append(str(value).encode())
    return b"\n".join(parts)
