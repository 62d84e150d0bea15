"""Copying an embedded (SQLite) database into an empty PostgreSQL database.

Contract of `copy_to_postgres(source, url, on_progress)`:
- the SQLite file is first brought to this build's schema (as `Database.open` does), and
  the PostgreSQL database is migrated to the same version;
- the target must be empty (no row in any table but `schema_version`), else
  `TargetNotEmpty` and nothing is written;
- every table is copied in foreign-key dependency order, in one PostgreSQL transaction:
  every column (blobs included), ids and sequence numbers as they are, identity
  sequences and the counters' sequences (`tenancy.SEQUENCES`) moved past the copied
  values; the columns the database keeps itself
  (`rows.DERIVED`) are rebuilt by the copied child rows, as in every other copy;
- the row count of every table is compared before the commit (`CountMismatch` if one
  differs, and nothing is committed);
- `on_progress(done, total)` is called with rows copied so far.

The SQLite file is read in one read transaction (a consistent snapshot); the server that
uses it should be stopped, so that nothing written after the snapshot is left behind.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg

from storage import migrations, postgres, tenancy, urls
from storage.blobs import BlobStore
from storage.database import Database
from storage.errors import StorageError, StorageUnavailable
from storage.journal_dictionary import unpack
from storage.rows import DERIVED

BATCH_ROWS = 1000
SKIPPED = frozenset({"schema_version", "sqlite_sequence"})
# Derived columns copied all the same: the journal rows copied with a session name it by
# its `journal_key`, so the key travels as it is.
COPIED_AS_THEY_ARE = {"sessions": frozenset({"journal_key"})}


class TargetNotEmpty(StorageError):
    """The PostgreSQL database already holds data."""


class CountMismatch(StorageError):
    """A table's row count in the copy differs from the source's."""


@dataclass(frozen=True)
class Copied:
    tables: int
    rows: int
    schema_version: int


async def copy_to_postgres(
    source: Path,
    url: str,
    on_progress: Callable[[int, int], None] | None = None,
    blobs: BlobStore | None = None,
) -> Copied:
    """Copy the SQLite database at `source` into the empty PostgreSQL database `url`.
    An uploaded file whose body is in the blob store `blobs` gets its body copied into
    its row (PostgreSQL keeps upload bodies in the database, shared by every process)."""
    if not await asyncio.to_thread(source.is_file):
        raise StorageUnavailable(f"no database at {source}", "cannot_open")
    for target in (source, url):
        db = await Database.open(target)
        await db.close()
    progress = on_progress or (lambda done, total: None)
    try:
        return await asyncio.to_thread(_copy, source, url, progress, blobs)
    except sqlite3.Error as exc:
        raise StorageError(f"cannot read {source}: {exc}") from exc
    except psycopg.Error as exc:
        raise postgres.translate(exc, f"cannot write {urls.redact(url)}") from exc


def _copy(
    source: Path, url: str, progress: Callable[[int, int], None], blobs: BlobStore | None
) -> Copied:
    lite = sqlite3.connect(f"file:{source}?mode=ro", uri=True, isolation_level=None)
    try:
        lite.execute("BEGIN")  # one snapshot for the whole copy
        with postgres.connect(url) as pg, pg.transaction():
            pg.execute("SELECT pg_advisory_xact_lock(%s)", (postgres.MIGRATION_LOCK,))
            tables = _order(lite)
            _refuse_non_empty(pg, tables)
            counts = {t: _count(lite, t) for t in tables}
            total = sum(counts.values())
            done = 0
            progress(0, total)
            for table in tables:
                for copied in _copy_table(lite, pg, table, blobs):
                    done += copied
                    progress(done, total)
            _move_identities(pg)
            _move_counters(pg)
            _verify(pg, counts)
            version = max(v for v, _ in migrations.available("postgresql"))
        lite.execute("COMMIT")
        return Copied(len(tables), total, version)
    finally:
        lite.close()


def _order(lite: sqlite3.Connection) -> list[str]:
    """Every table, each after the tables its foreign keys point at."""
    names = [
        str(r[0])
        for r in lite.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
            " ORDER BY name"
        )
        if r[0] not in SKIPPED
    ]
    parents = {
        name: {
            str(k[0])
            for k in lite.execute(f"SELECT \"table\" FROM pragma_foreign_key_list('{name}')")
            if k[0] != name
        }
        for name in names
    }
    ordered: list[str] = []
    while len(ordered) < len(names):
        ready = [n for n in names if n not in ordered and parents[n] <= set(ordered)]
        if not ready:
            raise StorageError(
                f"foreign keys form a cycle among {sorted(set(names) - set(ordered))}"
            )
        ordered.extend(ready)
    return ordered


def _count(lite: sqlite3.Connection, table: str) -> int:
    return int(lite.execute(f'SELECT COUNT(*) FROM "{table}"').fetchone()[0])


def _refuse_non_empty(pg: psycopg.Connection[postgres.Row], tables: list[str]) -> None:
    for table in tables:
        if pg.execute(f'SELECT 1 FROM "{table}" LIMIT 1').fetchone() is not None:
            raise TargetNotEmpty(
                f"the PostgreSQL database is not empty (table {table} has rows);"
                " copy into a new, empty database"
            )


def _columns(pg: psycopg.Connection[postgres.Row], table: str) -> list[str]:
    rows = pg.execute(
        "SELECT column_name FROM information_schema.columns"
        " WHERE table_schema = current_schema() AND table_name = %s ORDER BY ordinal_position",
        (table,),
    ).fetchall()
    return [str(r[0]) for r in rows]


def _copy_table(
    lite: sqlite3.Connection,
    pg: psycopg.Connection[postgres.Row],
    table: str,
    blobs: BlobStore | None,
) -> Iterator[int]:
    """Copy one table with COPY, yielding the rows copied per batch."""
    info = lite.execute(f"SELECT name FROM pragma_table_info('{table}')")
    source_columns = {str(r[0]) for r in info}
    derived = DERIVED.get(table, frozenset()) - COPIED_AS_THEY_ARE.get(table, frozenset())
    columns = [
        c for c in _columns(pg, table) if c not in derived and (c in source_columns or c == "rowid")
    ]
    listed = ", ".join(f'"{c}"' for c in columns)
    cursor = lite.execute(f'SELECT {listed} FROM "{table}"')
    with pg.cursor().copy(f'COPY "{table}" ({listed}) FROM STDIN') as copy:
        while batch := cursor.fetchmany(BATCH_ROWS):
            for row in batch:
                copy.write_row(_as_copied(table, columns, row, blobs))
            yield len(batch)


def _as_copied(
    table: str, columns: list[str], row: Any, blobs: BlobStore | None
) -> tuple[Any, ...]:
    """A row as PostgreSQL keeps it: an uploaded file's body in its row, an item's
    payload as its JSON text (SQLite may hold it deflated)."""
    if table == "files":
        return _inline_body(columns, row, blobs)
    if table == "items":
        values = list(row)
        values[columns.index("payload")] = unpack(values[columns.index("payload")])
        return tuple(values)
    return tuple(row)


def _inline_body(columns: list[str], row: Any, blobs: BlobStore | None) -> tuple[Any, ...]:
    """A `files` row whose body is in the blob store, with the body in `content`."""
    values = list(row)
    named = dict(zip(columns, values, strict=True))
    if named.get("blob") is None:
        return tuple(values)
    if blobs is None:
        raise StorageError(f"file {named['id']}: its body is in a blob store not given")
    try:
        body = blobs.path(str(named["blob"])).read_bytes()
    except OSError as exc:
        raise StorageError(f"file {named['id']}: cannot read its body: {exc}") from exc
    values[columns.index("content")] = body
    values[columns.index("blob")] = None
    return tuple(values)


def _move_identities(pg: psycopg.Connection[postgres.Row]) -> None:
    """Each identity column's sequence continues after the largest copied value."""
    identities = pg.execute(
        "SELECT table_name, column_name FROM information_schema.columns"
        " WHERE table_schema = current_schema() AND is_identity = 'YES'"
    ).fetchall()
    for table, column in identities:
        pg.execute(
            f"SELECT setval(pg_get_serial_sequence('\"{table}\"', '{column}'),"
            f' COALESCE((SELECT MAX("{column}") FROM "{table}"), 0) + 1, false)'
        )


def _move_counters(pg: psycopg.Connection[postgres.Row]) -> None:
    """Each counter PostgreSQL keeps in a sequence continues after the copied value."""
    for key, sequence in tenancy.SEQUENCES.items():
        pg.execute(
            f"SELECT setval('{sequence}', COALESCE((SELECT CAST(value AS BIGINT) FROM meta"
            " WHERE key = %s), 0) + 1, false)",
            (key,),
        )


def _verify(pg: psycopg.Connection[postgres.Row], counts: dict[str, int]) -> None:
    for table, expected in counts.items():
        row = pg.execute(f'SELECT COUNT(*) FROM "{table}"').fetchone()
        found = 0 if row is None else int(row[0])
        if found != expected:
            raise CountMismatch(f"table {table}: {expected} rows in the source, {found} copied")
