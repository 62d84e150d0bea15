"""Persistence on SQLite (embedded) or PostgreSQL: connection management, migrations,
group commit, repositories.

What lives here: `database.py` (one writer with group commit, readers, each connection
on a thread of its own, the durability contract), the two drivers behind it
(`sqlite_driver.py`, `postgres.py`, the only place that knows PostgreSQL's dialect),
`migrations.py` with `migrations/*.sql` and `migrations/postgres/*.sql` (numbered,
applied in order at open; a new SQLite database starts from `migrations/schema.sql`,
what the numbered files make), `transfer.py` (an SQLite database copied into PostgreSQL),
and one repository module per table family
(`sessions`, `turns`, `items`, `journal`, `environments`, ...): plain functions over a
transaction or a reader, returning rows.

May import: the standard library, msgspec and psycopg only; never `allinone` or
`runtime` (a layout test checks this). Callers own transactions through `Database.write`
and `Database.read`; no repository function opens its own.

Exception tree:

    StorageError                  anything the store could not do
    +-- SchemaTooNew              the database was written by a newer build
    +-- SchemaTooOld              an earlier build's database, opened without migrating
    +-- StorageUnavailable        the file cannot be opened or written
    +-- Conflict                  a compare-and-set or uniqueness rule refused the write
    +-- Unstorable                a value the backend cannot hold (PostgreSQL: U+0000 in text)
    +-- transfer.TargetNotEmpty   migrate-to-postgres: the target holds data already
    +-- transfer.CountMismatch    migrate-to-postgres: a copied table's count differs

sqlite3 and psycopg exceptions are translated into these at this package's boundary.
"""

from storage.database import Database
from storage.errors import (
    Conflict,
    SchemaTooNew,
    SchemaTooOld,
    StorageError,
    StorageUnavailable,
    Unstorable,
)

__all__ = [
    "Conflict",
    "Database",
    "SchemaTooNew",
    "SchemaTooOld",
    "StorageError",
    "StorageUnavailable",
    "Unstorable",
]
