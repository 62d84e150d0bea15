"""SQLite persistence: connection management, migrations, group commit, repositories.

What lives here: `database.py` (one writer with group commit, readers, each connection
on a thread of its own, the durability contract), `migrations.py` and `migrations/*.sql`
(numbered, applied in order at open), and one repository module per table family
(`sessions`, `turns`, `items`, `journal`, `environments`, ...): plain functions over a
transaction or a reader, returning rows.

May import: the standard library and msgspec only; never `allinone` or
`runtime` (a layout test checks this). Callers own transactions through `Database.write`
and `Database.read`; no repository function opens its own.

Exception tree:

    StorageError                  anything the store could not do
    +-- SchemaTooNew              the database was written by a newer build
    +-- StorageUnavailable        the file cannot be opened or written
    +-- Conflict                  a compare-and-set or uniqueness rule refused the write

sqlite3 exceptions are translated into these at this package's boundary.
"""

from storage.database import Database
from storage.errors import Conflict, SchemaTooNew, StorageError, StorageUnavailable

__all__ = ["Conflict", "Database", "SchemaTooNew", "StorageError", "StorageUnavailable"]
