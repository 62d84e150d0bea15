"""Numbered SQL migrations, applied at start under a schema-version table.

Files are `migrations/NNNN_name.sql` inside this package, loaded with importlib.resources
so a frozen build carries them. A database whose version is newer than the newest file
here is refused: it was written by a newer build.
"""

from __future__ import annotations

import re
import sqlite3
from importlib import resources

from storage.errors import SchemaTooNew

_NAME = re.compile(r"^(\d{4})_[a-z0-9_]+\.sql$")


def available() -> list[tuple[int, str]]:
    """Return (version, sql) for every migration file, in order."""
    found: list[tuple[int, str]] = []
    for entry in resources.files("storage").joinpath("migrations").iterdir():
        match = _NAME.match(entry.name)
        if match:
            found.append((int(match.group(1)), entry.read_text(encoding="utf-8")))
    found.sort()
    return found


def apply(conn: sqlite3.Connection) -> int:
    """Bring the schema up to date; return the resulting version.

    Each migration runs in its own transaction together with its version row, so a crash
    leaves the database at the previous version, never half-migrated.
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
    for version, sql in migrations:
        if version in applied:
            continue
        conn.execute("BEGIN IMMEDIATE")
        try:
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
        applied.add(version)
    return max(applied, default=0)


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
