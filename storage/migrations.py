"""Numbered SQL migrations, applied at start under a schema-version table.

Files are `migrations/NNNN_name.sql` next to this module, read from the directory this
module was loaded from: the source tree, or the frozen build's unpacked directory, where
the build ships them as data files. A database whose version is newer than the newest
file here is refused: it was written by a newer build.

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

from storage.errors import SchemaTooNew

if TYPE_CHECKING:
    import psycopg

    from storage import postgres

_NAME = re.compile(r"^(\d{4})_[a-z0-9_]+\.sql$")


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


def apply(conn: sqlite3.Connection) -> int:
    """Bring the schema up to date; return the resulting version.

    The pending migrations run in one transaction together with their version rows, so a
    crash leaves the database at the version it had, never half-migrated, and a new
    database is created with one commit (one sync to disk) rather than one per file.
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
        raise SchemaTooNew(
            f"database schema version {current} is newer than this build supports ({newest})"
        )
    pending = [(version, sql) for version, sql in migrations if version not in applied]
    if not pending:
        return current
    conn.execute("BEGIN IMMEDIATE")
    try:
        for version, sql in pending:
            for statement in _statements(sql):
                conn.execute(statement)
            conn.execute(
                "INSERT INTO schema_version (version, applied_at) VALUES (?, unixepoch())",
                (version,),
            )
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return max(current, pending[-1][0])


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
                raise SchemaTooNew(
                    f"database schema version {current} is newer than this build supports"
                    f" ({newest})"
                )
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
    """Split a migration into statements (our files keep one statement per `;` line end)."""
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
