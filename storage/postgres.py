"""The PostgreSQL driver behind `Database` (psycopg 3, its synchronous API on the
storage threads), and the only place that knows PostgreSQL's dialect.

The SQL in this package is written once, in the subset both backends accept (`?`
parameters, `ON CONFLICT`, `RETURNING`, `CAST`). What differs is handled here and in the
PostgreSQL migrations:
- parameters: `?` becomes `%s`; values are bound on the client (`ClientCursor`), so an
  untyped `?` takes its type from its context as it does in SQLite;
- Python booleans are sent as the integers 0 and 1 the schema stores, and `numeric`
  results (a `SUM` of integers) come back as `int` (or `float`), as SQLite gives them;
- SQLite's functions the SQL uses (`unixepoch`, `json_extract`, `json_each`, two-argument
  `max`, `zeroblob`) are defined by the PostgreSQL migrations;
- rows behave like `sqlite3.Row`: index and column-name access, `keys()`, `dict(row)`;
- the one table read through `Tx.insert` and `Tx.write_blob` (`files`) has a `rowid`
  identity column of its own; a blob is streamed in through COPY;
- an SQLite column that holds bytes in a TEXT column (a compact event id) holds bytea's
  hex text here (`journal_templates.event_id_text` reads both);
- text cannot hold U+0000 in PostgreSQL: such a value is `Unstorable`;
- a large value is read in chunks (`Snapshot.chunks`) on a connection of its own, in one
  read-only REPEATABLE READ transaction, so that a reader sees it whole even when its row
  changes or goes meanwhile.

Errors: `translate` maps psycopg's errors into the storage tree. A lost server (a
connection error, an administrator's shutdown) is `StorageUnavailable`; the connection
is opened again at its next use, so the store recovers when the server does.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterable, Sequence
from typing import Any, BinaryIO

import psycopg
from psycopg import ClientCursor, errors, postgres
from psycopg.adapt import Buffer, Dumper, Loader
from psycopg.rows import RowMaker

from storage.errors import Conflict, StorageError, StorageUnavailable, Unstorable

CONNECT_TIMEOUT_SECONDS = 10
# Held while migrating, so that several processes starting at once migrate one by one.
MIGRATION_LOCK = 0x636F7265626F78
BLOB_CHUNK_BYTES = 256 * 1024


@functools.lru_cache(maxsize=4096)
def convert(sql: str) -> str:
    """The statement in psycopg's parameter style (`%s`, and `%` doubled)."""
    return sql.replace("%", "%%").replace("?", "%s")


class Row(tuple[Any, ...]):
    """A result row read like `sqlite3.Row`: by index, by column name, `keys()`."""

    _index: dict[str, int]
    _names: tuple[str, ...]

    def __new__(cls, values: Sequence[Any], names: tuple[str, ...], index: dict[str, int]) -> Row:
        row = super().__new__(cls, values)
        row._names = names
        row._index = index
        return row

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, str):
            return super().__getitem__(self._index[key])
        return super().__getitem__(key)

    def keys(self) -> list[str]:
        return list(self._names)


def _rows(cursor: Any) -> RowMaker[Row]:
    names = tuple(column.name for column in cursor.description or ())
    index = {name: n for n, name in enumerate(names)}

    def make(values: Sequence[Any]) -> Row:
        return Row(values, names, index)

    return make


class _BoolAsInt(Dumper):
    """Booleans are stored as 0 and 1 (the schema's integer columns), as in SQLite."""

    oid = postgres.types["int8"].oid

    def dump(self, obj: Any) -> Buffer:
        return b"1" if obj else b"0"

    def quote(self, obj: Any) -> Buffer:
        return self.dump(obj)


class _Number(Loader):
    """`numeric` (what PostgreSQL sums integers into) read as `int`, else `float`."""

    def load(self, data: Buffer) -> Any:
        text = bytes(data).decode()
        try:
            return int(text)
        except ValueError:
            return float(text)


def connect(url: str) -> psycopg.Connection[Row]:
    """A connection in autocommit mode (transactions are begun explicitly), binding
    parameters on the client, with the adaptations above."""
    conn: psycopg.Connection[Row] = psycopg.connect(
        url,
        autocommit=True,
        cursor_factory=ClientCursor,
        row_factory=_rows,
        connect_timeout=CONNECT_TIMEOUT_SECONDS,
    )
    conn.adapters.register_dumper(bool, _BoolAsInt)
    conn.adapters.register_loader("numeric", _Number)
    return conn


class Driver:
    """One PostgreSQL connection, used by one storage thread only; reopened at its next
    use after the server went away."""

    name = "postgresql"
    begin_sql = "BEGIN"
    statement_atomic = False
    errors: tuple[type[Exception], ...] = (psycopg.Error,)
    integrity_errors: tuple[type[Exception], ...] = (psycopg.IntegrityError,)
    retry_errors: tuple[type[Exception], ...] = (
        psycopg.errors.DeadlockDetected,
        psycopg.errors.SerializationFailure,
    )

    def __init__(self, url: str) -> None:
        self._url = url
        self._conn: psycopg.Connection[Row] | None = None

    @property
    def conn(self) -> psycopg.Connection[Row]:
        conn = self._conn
        if conn is None or conn.closed or conn.broken:
            if conn is not None:
                with contextlib.suppress(psycopg.Error):
                    conn.close()
            self._conn = None
            conn = self._conn = connect(self._url)
        return conn

    def execute(self, sql: str, params: Iterable[Any]) -> Any:
        return self.conn.execute(convert(sql), tuple(params))

    def insert(self, sql: str, params: Iterable[Any]) -> int:
        row = self.conn.execute(convert(sql) + " RETURNING rowid", tuple(params)).fetchone()
        assert row is not None
        return int(row[0])

    def write_blob(self, table: str, column: str, rowid: int, source: BinaryIO) -> None:
        # Streamed, one chunk at a time, through COPY into a temporary table (as bytea's
        # hex text, its backslash escaped for COPY), then moved into the row on the
        # server: the content never sits in this process's memory whole.
        conn = self.conn
        conn.execute(
            "CREATE TEMP TABLE IF NOT EXISTS blob_upload (content BYTEA) ON COMMIT DELETE ROWS"
        )
        conn.execute("DELETE FROM blob_upload")
        with conn.cursor().copy("COPY blob_upload (content) FROM STDIN") as copy:
            copy.write(b"\\\\x")
            while chunk := source.read(BLOB_CHUNK_BYTES):
                copy.write(chunk.hex().encode())
            copy.write(b"\n")
        conn.execute(
            f"UPDATE {table} SET {column} = (SELECT content FROM blob_upload) WHERE rowid = %s",
            (rowid,),
        )
        conn.execute("DELETE FROM blob_upload")

    def run(self, statement: str) -> None:
        if statement != self.begin_sql:
            self.conn.execute(statement)
            return
        # A transaction begins on a connection the server may have closed since its last
        # use (a restart): nothing has run yet, so it begins again on a new one.
        try:
            self.conn.execute(statement)
        except psycopg.OperationalError:
            if not self.lost():
                raise
            self.conn.execute(statement)

    def lost(self) -> bool:
        """Whether the connection is gone (the next use opens a new one)."""
        return self._conn is None or self._conn.closed or self._conn.broken

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    @staticmethod
    def translate(exc: BaseException, context: str = "") -> StorageError:
        return translate(exc, context)


class Snapshot:
    """A connection of its own holding one read-only REPEATABLE READ transaction: every
    statement sees the database as the first one did. Used from one thread at a time;
    `close` ends it."""

    def __init__(self, url: str) -> None:
        self._conn = connect(url)
        try:
            self._conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        except BaseException:
            self._conn.close()
            raise

    def fetchone(self, sql: str, params: Iterable[Any] = ()) -> Row | None:
        return self._conn.execute(convert(sql), tuple(params)).fetchone()

    def chunks(self, table: str, column: str, rowid: int) -> Callable[[int], bytes]:
        """A `read(n)` over the bytea `table.column` of row `rowid`: its next at most `n`
        bytes, `b""` at its end. Only those bytes cross the connection each time."""
        offset = 1  # substring counts from 1
        sql = f"SELECT substring({column} FROM %s FOR %s) FROM {table} WHERE rowid = %s"

        def read(size: int) -> bytes:
            nonlocal offset
            row = self._conn.execute(sql, (offset, size, rowid)).fetchone()
            chunk = b"" if row is None or row[0] is None else bytes(row[0])
            offset += len(chunk)
            return chunk

        return read

    def close(self) -> None:
        self._conn.close()


_REASONS: tuple[tuple[type[Exception], str], ...] = (
    (errors.DiskFull, "disk_full"),
    (errors.ReadOnlySqlTransaction, "read_only"),
    (errors.InsufficientPrivilege, "read_only"),
    (errors.IoError, "io_error"),
    (errors.CannotConnectNow, "cannot_open"),
    (errors.AdminShutdown, "unavailable"),
    (errors.LockNotAvailable, "busy"),
    (errors.DeadlockDetected, "busy"),
    (errors.SerializationFailure, "busy"),
    (errors.TooManyConnections, "busy"),
    (psycopg.OperationalError, "unavailable"),
    (psycopg.InterfaceError, "unavailable"),
)


def translate(exc: BaseException, context: str = "") -> StorageError:
    """The storage error for a psycopg error: `Conflict` for a broken uniqueness or
    check rule, `StorageUnavailable` for a server that cannot take the work for now
    (gone, full, read-only, overloaded), `StorageError` otherwise."""
    message = f"{context}: {exc}" if context else str(exc)
    if isinstance(exc, psycopg.IntegrityError):
        return Conflict(message)
    if isinstance(exc, psycopg.DataError) and "NUL" in str(exc):
        return Unstorable(message)
    for kind, reason in _REASONS:
        if isinstance(exc, kind):
            return StorageUnavailable(message, reason)
    return StorageError(message)
