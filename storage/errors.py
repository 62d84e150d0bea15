"""The storage exception tree (see the package docstring), and the one translation of
sqlite3 errors into it."""

from __future__ import annotations

import sqlite3

# Primary result codes (the low byte of an extended code) that mean the store cannot
# take writes for now: the disk is full, the file or its directory is read-only, the
# disk failed an I/O, the file could not be opened, or another writer holds the lock
# past the busy timeout. Each may clear without a restart.
UNAVAILABLE_CODES = frozenset(
    {
        sqlite3.SQLITE_FULL,
        sqlite3.SQLITE_READONLY,
        sqlite3.SQLITE_IOERR,
        sqlite3.SQLITE_CANTOPEN,
        sqlite3.SQLITE_BUSY,
        sqlite3.SQLITE_LOCKED,
        sqlite3.SQLITE_PERM,
    }
)


class StorageError(Exception):
    pass


class SchemaTooNew(StorageError):
    """The database was written by a newer build: this one refuses it."""

    def __init__(self, version: int, newest: int) -> None:
        super().__init__(
            f"database schema version {version} is newer than this build supports ({newest})"
        )
        self.version = version
        self.newest = newest


class SchemaTooOld(StorageError):
    """The database is at an earlier build's schema, and the caller does not migrate (only
    the server does, as it starts)."""

    def __init__(self, version: int, newest: int) -> None:
        super().__init__(f"database schema version {version} is older than this build's ({newest})")
        self.version = version
        self.newest = newest


class StorageUnavailable(StorageError):
    """The store cannot take writes (or be opened) for now; nothing was changed.
    `reason` is a short fixed phrase fit for a log line or an API error."""

    def __init__(self, message: str, reason: str = "unavailable") -> None:
        super().__init__(message)
        self.reason = reason


class Conflict(StorageError):
    """A compare-and-set or uniqueness rule refused the write; nothing was changed."""


class Unstorable(StorageError):
    """A value the backend cannot hold (PostgreSQL keeps no U+0000 in text); nothing was
    changed."""


_REASONS = {
    sqlite3.SQLITE_FULL: "disk_full",
    sqlite3.SQLITE_READONLY: "read_only",
    sqlite3.SQLITE_PERM: "read_only",
    sqlite3.SQLITE_IOERR: "io_error",
    sqlite3.SQLITE_CANTOPEN: "cannot_open",
    sqlite3.SQLITE_BUSY: "busy",
    sqlite3.SQLITE_LOCKED: "busy",
}


def translate(exc: sqlite3.Error, context: str = "") -> StorageError:
    """The storage error for a sqlite3 error: `StorageUnavailable` for a fault of the
    disk or the file (full, read-only, I/O, locked), `StorageError` otherwise."""
    message = f"{context}: {exc}" if context else str(exc)
    code = getattr(exc, "sqlite_errorcode", None)
    if isinstance(code, int) and code & 0xFF in UNAVAILABLE_CODES:
        return StorageUnavailable(message, _REASONS[code & 0xFF])
    return StorageError(message)
