"""Numbered SQL migrations, applied at start under a schema-version table.

Files are `migrations/NNNN_name.sql` next to this module, read from the directory this
module was loaded from: the source tree, or the frozen build's unpacked directory, where
the build ships them as data files. A database whose version is newer than the newest
file here is refused: it was written by a newer build. Only `apply` (and
`apply_postgres`) changes a schema; `recorded` and `check` let a caller that must not
(a command working on a data directory that an older build may be serving) refuse any
other version than this build's.

A new, empty database does not run the files one by one: it starts from
`migrations/schema.sql`, the schema and rows the files make up to the version its first
line names, written by `snapshot()` (`make schema` rewrites it; a test checks that it
matches the files), and then runs any file above that version, all in one transaction.
Each `ALTER TABLE` of a file makes SQLite read the whole schema again, so the files
alone take about 90 ms, a sixth of a cold start, and the snapshot about 13 ms. A
database with any version recorded migrates from the files.

PostgreSQL has its own files, `migrations/postgres/NNNN_name.sql`, numbered like the
SQLite ones: a file stands for its own number and every SQLite number below it that has
no PostgreSQL file of its own (the first, `0023_baseline.sql`, creates the schema as
SQLite has it at 0023). Every SQLite migration above the baseline needs a PostgreSQL
file of the same number (a test checks this). They are applied under a transaction-level
advisory lock, so several processes starting together migrate one after the other.
"""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING

from storage.errors import SchemaTooNew, SchemaTooOld

if TYPE_CHECKING:
    import psycopg

    from storage import postgres

_NAME = re.compile(r"^(\d{4})_[a-z0-9_]+\.sql$")
SNAPSHOT = Path(__file__).parent / "migrations" / "schema.sql"
_SNAPSHOT_HEADER = re.compile(r"^-- corebox schema at version (\d+)\b")


def available(backend: str = "sqlite") -> list[tuple[int, str]]:
    """Return (version, sql) for every migration file of `backend` (`sqlite` or
    `postgresql`), in order."""
    folder = Path(__file__).parent / "migrations"
    if backend == "postgresql":
        folder = folder / "postgres"
    found: list[tuple[int, str]] = []
    for entry in folder.iterdir():
        match = _NAME.match(entry.name)
        if match:
            found.append((int(match.group(1)), entry.read_text(encoding="utf-8")))
    found.sort()
    return found


def apply(conn: sqlite3.Connection, snapshot: str | None = None) -> int:
    """Bring the schema up to date; return the resulting version.

    The pending migrations run in one transaction together with their version rows, so a
    crash leaves the database at the version it had, never half-migrated, and a new
    database is created with one commit (one sync to disk) rather than one per file. A new
    database starts from `snapshot` (the text of a schema snapshot; by default the one
    beside the files, when there is one).
    """
    conn.execute(
        "CREATE TABLE IF NOT EXISTS schema_version ("
        " version INTEGER PRIMARY KEY, applied_at INTEGER NOT NULL)"
    )
    applied = {int(r[0]) for r in conn.execute("SELECT version FROM schema_version")}
    current = max(applied, default=0)
    migrations = available()
    newest = migrations[-1][0] if migrations else 0
    if current > newest:
        raise SchemaTooNew(current, newest)
    pending = [(version, sql) for version, sql in migrations if version not in applied]
    if not pending:
        return current
    if applied:
        snapshot = None  # only a new database starts from one
    elif snapshot is None and SNAPSHOT.exists():
        snapshot = SNAPSHOT.read_text(encoding="utf-8")
    conn.execute("BEGIN IMMEDIATE")
    try:
        if snapshot is not None:
            current, pending = _start_from(conn, snapshot, pending)
        for current, sql in pending:
            for statement in _statements(sql):
                conn.execute(statement)
            _record(conn, current)
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return current


def latest() -> int:
    """The schema version this build's SQLite files bring a database to."""
    migrations = available()
    return migrations[-1][0] if migrations else 0


def recorded(conn: sqlite3.Connection) -> int:
    """The schema version recorded in `conn`'s database (0 when it records none), read
    without changing anything."""
    exists = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_version'"
    ).fetchone()
    if exists is None:
        return 0
    row = conn.execute("SELECT MAX(version) FROM schema_version").fetchone()
    return int(row[0] or 0)


def check(version: int, *, older: bool = False) -> int:
    """`version` when this build works on a database at it as it is: raises
    SchemaTooNew for a newer one and, unless `older` (the caller only reads the file as
    a whole), SchemaTooOld for an older one."""
    current = latest()
    if version > current:
        raise SchemaTooNew(version, current)
    if version < current and not older:
        raise SchemaTooOld(version, current)
    return version


def _start_from(
    conn: sqlite3.Connection, snapshot: str, pending: list[tuple[int, str]]
) -> tuple[int, list[tuple[int, str]]]:
    """Create a new database's schema and rows from `snapshot` and record the versions it
    stands for; return its version and the migrations above it."""
    header = _SNAPSHOT_HEADER.match(snapshot)
    if header is None:
        raise ValueError("a schema snapshot must begin with its version line")
    version = int(header.group(1))
    for statement in _statements(snapshot):
        conn.execute(statement)
    for number, _ in pending:
        if number <= version:
            _record(conn, number)
    return version, [(number, sql) for number, sql in pending if number > version]


def _record(conn: sqlite3.Connection, version: int) -> None:
    conn.execute(
        "INSERT INTO schema_version (version, applied_at) VALUES (?, unixepoch())", (version,)
    )


def snapshot(version: int | None = None) -> str:
    """The text of `migrations/schema.sql`: the schema and rows a new database has after
    the files up to `version` (by default all of them), as statements that make it again.
    Tables come first with their rows, then indexes, views and triggers, each kind in the
    order SQLite keeps them; `schema_version` is left to `apply`."""
    files = [(n, sql) for n, sql in available() if version is None or n <= version]
    conn = sqlite3.connect(":memory:", isolation_level=None)
    try:
        conn.execute("BEGIN")
        for _, sql in files:
            for statement in _statements(sql):
                conn.execute(statement)
        conn.execute("COMMIT")
        kinds = "CASE type WHEN 'table' THEN 0 WHEN 'index' THEN 1 WHEN 'view' THEN 2 ELSE 3 END"
        schema = conn.execute(
            "SELECT type, name, sql FROM sqlite_master WHERE sql IS NOT NULL"
            f" ORDER BY {kinds}, rowid"
        ).fetchall()
        parts = [
            f"-- corebox schema at version {files[-1][0] if files else 0}: what the numbered"
            " files make of a new database,\n-- which starts from here. Written by"
            " `make schema` (storage.migrations.snapshot()); not edited by hand.\n"
        ]
        parts += [f"{sql};\n" for kind, name, sql in schema if kind == "table" and _ours(name)]
        parts += _rows(conn, [name for kind, name, _ in schema if kind == "table"])
        parts += [f"{sql};\n" for kind, name, sql in schema if kind != "table" and _ours(name)]
        return "\n".join(parts)
    finally:
        conn.close()


def _ours(name: str) -> bool:
    """Whether a schema object is made by a statement of ours (not SQLite's own tables)."""
    return not name.startswith("sqlite_")


def _rows(conn: sqlite3.Connection, tables: list[str]) -> list[str]:
    """An `INSERT` per row of `tables` (SQLite's `sqlite_sequence` too), its values
    written by SQLite's own `quote()`."""
    statements: list[str] = []
    for table in tables:
        columns = [row[1] for row in conn.execute(f'PRAGMA table_info("{table}")')]
        names = ", ".join(f'"{column}"' for column in columns)
        values = " || ', ' || ".join(f'quote("{column}")' for column in columns)
        for (row,) in conn.execute(f'SELECT {values} FROM "{table}" ORDER BY 1'):
            statements.append(f'INSERT INTO "{table}" ({names}) VALUES ({row});\n')
    return statements


def apply_postgres(url: str) -> int:
    """Bring the PostgreSQL database at `url` up to date; return the resulting version.
    Each migration is one transaction with its version row, as on SQLite."""
    from storage import postgres  # psycopg loads for a PostgreSQL database only

    with postgres.connect(url) as conn:
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (postgres.MIGRATION_LOCK,))
            conn.execute(
                "CREATE TABLE IF NOT EXISTS schema_version ("
                " version BIGINT PRIMARY KEY, applied_at BIGINT NOT NULL)"
            )
            applied = {int(r[0]) for r in conn.execute("SELECT version FROM schema_version")}
            current = max(applied, default=0)
            pending = available("postgresql")
            newest = pending[-1][0] if pending else 0
            if current > newest:
                raise SchemaTooNew(current, newest)
            for version, sql in pending:
                if version <= current:
                    continue
                _apply_postgres_file(conn, version, sql)
                current = version
        return current


def _apply_postgres_file(conn: psycopg.Connection[postgres.Row], version: int, sql: str) -> None:
    # No parameters: the file goes as one query string, every statement in it.
    conn.execute(sql.encode())
    conn.execute(
        "INSERT INTO schema_version (version, applied_at)"
        " VALUES (%s, CAST(extract(epoch FROM now()) AS BIGINT))",
        (version,),
    )


def _statements(sql: str) -> list[str]:
    """Split a migration or a schema snapshot into statements (our files keep one
    statement per `;` line end; whole-line comments are dropped, so the text SQLite keeps
    of a table never has one, and a snapshot's statements split the same way)."""
    parts: list[str] = []
    buffer: list[str] = []
    for line in sql.splitlines():
        if line.strip().startswith("--"):
            continue
        buffer.append(line)
        if line.rstrip().endswith(";") and sqlite3.complete_statement("\n".join(buffer)):
            parts.append("\n".join(buffer))
            buffer = []
    if "".join(buffer).strip():
        parts.append("\n".join(buffer))
    return parts
