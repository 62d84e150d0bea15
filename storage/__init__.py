"""SQLite persistence: connection management, migrations, group commit, repositories.

Exception tree:

    StorageError                  anything the store could not do
    +-- SchemaTooNew              the database was written by a newer build
    +-- StorageUnavailable        the file cannot be opened or written
    +-- Conflict                  a compare-and-set or uniqueness rule refused the write

sqlite3 and aiosqlite exceptions are translated into these at this package's boundary.
"""

from storage.database import Database
from storage.errors import Conflict, SchemaTooNew, StorageError, StorageUnavailable

__all__ = ["Conflict", "Database", "SchemaTooNew", "StorageError", "StorageUnavailable"]
