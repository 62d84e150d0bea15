"""The local store's schema as numbered migrations, applied in order when a store opens.

The store records its version in `schema_version` (one row per applied migration, like
Core's database). `migrate` applies every migration newer than the recorded version,
each in its own transaction together with its version row, so a crash leaves the store
at a whole version. A store recorded at a version this build does not know was written
by a newer receiver and is refused (StoreError), never downgraded. A store written
before versions were recorded (the tables exist, `schema_version` does not) is at
version 1: migration 1 is that schema, written so it can run over it unchanged.

The migrations live here, in code, so a frozen build carries them without data files.
"""

from __future__ import annotations

import sqlite3
from typing import Final

from allinone.receiver.errors import StoreError

MIGRATIONS: Final[tuple[tuple[int, str, str], ...]] = (
    (
        1,
        "initial",
        """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS events (
    event_id TEXT PRIMARY KEY,
    seq INTEGER NOT NULL UNIQUE,
    contact_id TEXT NOT NULL,
    type TEXT NOT NULL,
    direction TEXT NOT NULL,
    body TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    contact_expires_at INTEGER NOT NULL,
    receipted INTEGER NOT NULL,
    pending INTEGER NOT NULL,
    job_id TEXT,
    saved_at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS events_contact ON events(contact_id, seq);
CREATE TABLE IF NOT EXISTS jobs (
    job_id TEXT PRIMARY KEY,
    contact_id TEXT NOT NULL,
    through_seq INTEGER NOT NULL,
    state TEXT NOT NULL,
    lease_id TEXT,
    lease_epoch INTEGER,
    primary_epoch INTEGER NOT NULL,
    reply_key TEXT NOT NULL,
    notification_id TEXT NOT NULL,
    decision TEXT,
    owner_confirmed INTEGER NOT NULL DEFAULT 0,
    code TEXT,
    contact_expires_at INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS jobs_contact ON jobs(contact_id, state);
CREATE TABLE IF NOT EXISTS notifications (
    notification_id TEXT PRIMARY KEY,
    job_id TEXT,
    contact_id TEXT NOT NULL,
    summary TEXT NOT NULL,
    state TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    code TEXT,
    contact_expires_at INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
""",
    ),
    (
        2,
        "event_streams",
        # A seq is unique within the stream that issued it, not forever: after a
        # platform restore and a stream rotation the new stream may issue seqs again.
        # Every saved event names its stream (taken from the event body, which has
        # carried it since the first version).
        """
CREATE TABLE events_v2 (
    event_id TEXT PRIMARY KEY,
    stream_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    contact_id TEXT NOT NULL,
    type TEXT NOT NULL,
    direction TEXT NOT NULL,
    body TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    contact_expires_at INTEGER NOT NULL,
    receipted INTEGER NOT NULL,
    pending INTEGER NOT NULL,
    job_id TEXT,
    saved_at INTEGER NOT NULL,
    UNIQUE (stream_id, seq)
);
INSERT INTO events_v2 (event_id, stream_id, seq, contact_id, type, direction, body,
    created_at, contact_expires_at, receipted, pending, job_id, saved_at)
SELECT event_id, COALESCE(json_extract(body, '$.stream_id'), ''), seq, contact_id, type,
    direction, body, created_at, contact_expires_at, receipted, pending, job_id, saved_at
FROM events;
DROP TABLE events;
ALTER TABLE events_v2 RENAME TO events;
CREATE INDEX events_contact ON events(contact_id, seq);
""",
    ),
)
LATEST: Final[int] = MIGRATIONS[-1][0]


def version(conn: sqlite3.Connection) -> int:
    """The store's recorded version: 0 for an empty file, 1 for a store written before
    versions were recorded."""
    tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    if "schema_version" in tables:
        found = conn.execute("SELECT MAX(version) FROM schema_version").fetchone()[0]
        return int(found or 0)
    return 1 if "events" in tables else 0


def migrate(conn: sqlite3.Connection) -> int:
    """Bring the store to LATEST; return the version it was at. Raise StoreError when it
    is newer than this build knows."""
    start = version(conn)
    if start > LATEST:
        raise StoreError(
            f"the local store is at schema version {start}, newer than this receiver knows"
            f" ({LATEST}); it was written by a newer build: use that build or a fresh"
            " directory"
        )
    conn.execute(
        "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER PRIMARY KEY,"
        " name TEXT NOT NULL,"
        " applied_at INTEGER NOT NULL DEFAULT (CAST(strftime('%s', 'now') AS INTEGER)))"
    )
    if start == 1:
        conn.execute("INSERT OR IGNORE INTO schema_version (version, name) VALUES (1, 'initial')")
    for number, name, sql in MIGRATIONS:
        if number > start:
            _apply(conn, number, name, sql)
    return start


def _apply(conn: sqlite3.Connection, number: int, name: str, sql: str) -> None:
    """One migration and its version row in one transaction."""
    try:
        conn.executescript(
            f"BEGIN IMMEDIATE;\n{sql}\n"
            f"INSERT INTO schema_version (version, name) VALUES ({number}, '{name}');\nCOMMIT;"
        )
    except sqlite3.Error as exc:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise StoreError(f"local store migration {number} ({name}) failed: {exc}") from exc
