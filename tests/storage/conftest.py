"""The storage suite runs on both backends: a test that takes `target` runs once on an
SQLite file in its temporary directory and once on a fresh PostgreSQL database on the
throw-away server (tests/support/postgres.py). Tests of what only SQLite has (its files,
WAL, file faults) take `tmp_path` alone and say so in their docstring."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from storage import postgres
from tests.support.postgres import Cluster

Target = Callable[[str], "Path | str"]


@pytest.fixture(params=["sqlite", "postgresql"])
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def target(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> Target:
    """`target(name)`: what `Database.open` takes for the database called `name` in this
    test (the same name gives the same database)."""
    if backend == "sqlite":
        return lambda name: tmp_path / name
    cluster: Cluster = request.getfixturevalue("postgres_cluster")
    urls: dict[str, str] = {}

    def url(name: str) -> str:
        if name not in urls:
            urls[name] = cluster.fresh_database()
        return urls[name]

    return url


class Raw:
    """A plain connection to a test database, outside `Database` (to set up a state or to
    check one), in autocommit mode, taking the storage package's `?` SQL on both
    backends."""

    def __init__(self, where: Path | str) -> None:
        self._pg: psycopg.Connection[postgres.Row] | None = None
        self._lite: sqlite3.Connection | None = None
        if postgres.is_url(where):
            self._pg = postgres.connect(str(where))
        else:
            self._lite = sqlite3.connect(where, isolation_level=None)
            self._lite.row_factory = sqlite3.Row

    def execute(self, sql: str, params: Iterable[Any] = ()) -> list[Any]:
        if self._pg is not None:
            cursor = self._pg.execute(postgres.convert(sql), tuple(params))
            return list(cursor.fetchall()) if cursor.description else []
        assert self._lite is not None
        return self._lite.execute(sql, tuple(params)).fetchall()

    def close(self) -> None:
        if self._pg is not None:
            self._pg.close()
        if self._lite is not None:
            self._lite.close()


@contextlib.contextmanager
def raw(where: Path | str) -> Iterator[Raw]:
    conn = Raw(where)
    try:
        yield conn
    finally:
        conn.close()
