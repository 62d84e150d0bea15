"""The database: one writer with group commit, and reader connections, on one of two
backends: an SQLite file (the embedded default) or a PostgreSQL server, chosen by what
`Database.open` is given (a path, or a `postgresql://` URL). The driver of each backend
(`sqlite_driver.Driver`, `postgres.Driver`) is the only code that differs; the contract
below holds on both.

Contract:
- `write(job)` runs `job(tx)` inside a transaction on the single writer connection.
  Concurrent jobs are batched into one transaction (each inside its own savepoint, so a
  job that raises changes nothing and does not disturb the others) and committed
  together. A job alone in its batch on SQLite needs no savepoint: SQLite undoes a
  failed statement by itself, and the job's transaction is rolled back if it raises.
  `write` returns only after that COMMIT succeeded (SQLite with `synchronous=FULL`,
  PostgreSQL with `fsync` and `synchronous_commit` as the server is configured): what it
  acknowledges survives a crash. Callbacks registered with `tx.after_commit` run after
  the commit, before the caller is resumed; those registered with `tx.before_end` run at
  the end of the job, inside its savepoint or lone transaction (a job that raises there
  changes nothing either).
- `read(job)` runs `job(conn)` on a reader connection; it sees every transaction
  committed before it started (each statement its own snapshot, on both backends).
  `read_now(job)` is the same on the event loop's own reader connection (SQLite only),
  without a hand-off to a thread: for the hot path's small reads that an index bounds
  (it holds the loop while it runs, so never a scan). On PostgreSQL it hands off like
  `read`, since every statement there is a network round trip.
- Each connection belongs to one thread of its own. A job runs whole on that thread: a
  writer batch (every job, savepoint and the COMMIT) or a read job is one hand-off from
  the event loop, not one per statement. Jobs are coroutines that await only their `Tx`
  or `Reader` (whose methods never suspend), so the thread drives each one to its end
  synchronously; a job that awaits anything else is a programming error, raised as one.
- A disk or file fault (full, read-only, I/O error, locked), or a PostgreSQL server that
  went away, raises `StorageUnavailable` from `write` and `read`; nothing of the failed
  transaction was committed. `failure` names the last write fault until a later
  (non-probe) write commits, and
  `write_durably(job)` retries a write through such a fault until the store takes
  writes again.
- Several processes writing one PostgreSQL database can meet in a deadlock (or a
  serialization failure) between two batches: the server then aborts one batch's
  transaction. That batch is run again whole, in a fresh transaction (every job's
  function called again with a new `Tx`), up to `BATCH_ATTEMPTS` times, before its jobs
  fail. A job must therefore keep its effects to its `Tx` until the commit (state it
  prepares for its caller is set again, from the start, by each run; effects on the
  world go in `after_commit` callbacks); a blob it streams in is read again from where
  it started.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import sqlite3
from collections.abc import Awaitable, Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, Protocol, TypeVar, cast

from storage import migrations, sqlite_driver, urls
from storage.errors import Conflict, StorageError, StorageUnavailable

log = logging.getLogger(__name__)

T = TypeVar("T")
MAX_BATCH = 64
# How many times a batch runs before its jobs fail with a lost race (deadlock,
# serialization failure) against another process's transaction.
BATCH_ATTEMPTS = 5
RETRY_MAX_SECONDS = 5.0


class Driver(Protocol):
    """One backend connection, used by one storage thread only."""

    name: str
    begin_sql: str
    # Whether a failed statement undoes only itself and leaves its transaction usable
    # (SQLite); on PostgreSQL it aborts the transaction, so every job needs a savepoint.
    statement_atomic: bool
    errors: tuple[type[Exception], ...]
    integrity_errors: tuple[type[Exception], ...]
    # Errors that abort a transaction which, run again, may well commit.
    retry_errors: tuple[type[Exception], ...]

    def execute(self, sql: str, params: Iterable[Any]) -> Any: ...
    def insert(self, sql: str, params: Iterable[Any]) -> int: ...
    def write_blob(self, table: str, column: str, rowid: int, source: BinaryIO) -> None: ...
    def run(self, statement: str) -> None: ...
    def lost(self) -> bool: ...
    def close(self) -> None: ...
    def translate(self, exc: BaseException, context: str = "") -> StorageError: ...


class Tx:
    """The writer's view of one job inside a group-committed transaction. Its methods are
    coroutines that never suspend: the job runs on the writer's thread."""

    def __init__(self, conn: _Connection) -> None:
        self._conn = conn
        self._after: list[Callable[[], None]] = []
        self._before_end: dict[object, Callable[[], Awaitable[None]]] = {}
        # What a job's parts keep between statements of this job only (never across jobs).
        self.memo: dict[object, Any] = {}
        # Each blob source read by this job, and where it was read from.
        self._sources: list[tuple[BinaryIO, int]] = []

    @property
    def backend(self) -> str:
        """`sqlite` or `postgresql`, for the few statements that differ (kept in storage)."""
        return self._conn.driver.name

    async def execute(self, sql: str, params: Iterable[Any] = ()) -> int:
        """Run one statement; return the number of rows it changed. A broken uniqueness
        or check rule raises `Conflict`; on PostgreSQL it also ends what the job may do
        (the job's statements are rolled back), so a job that meets one raises."""
        try:
            rowcount: int = self._conn.execute(sql, params).rowcount
        except self._conn.driver.integrity_errors as exc:
            raise Conflict(str(exc)) from exc
        return rowcount

    async def fetchone(self, sql: str, params: Iterable[Any] = ()) -> sqlite3.Row | None:
        return cast("sqlite3.Row | None", self._conn.execute(sql, params).fetchone())

    async def fetchall(self, sql: str, params: Iterable[Any] = ()) -> list[sqlite3.Row]:
        return cast("list[sqlite3.Row]", self._conn.execute(sql, params).fetchall())

    async def insert(self, sql: str, params: Iterable[Any] = ()) -> int:
        """Run one INSERT into a table with a `rowid` (on PostgreSQL, an identity column
        of that name); return the new row's rowid."""
        self._conn.statements += 1
        try:
            return self._conn.watch(self._conn.driver.insert, sql, params)
        except self._conn.driver.integrity_errors as exc:
            raise Conflict(str(exc)) from exc

    async def write_blob(self, table: str, column: str, rowid: int, source: BinaryIO) -> None:
        """Copy `source`, from its current position to its end, into the blob
        `table.column` of row `rowid`, which must hold exactly that many bytes already
        (inserted as `zeroblob(n)`). On SQLite one chunk at a time: the content never
        sits in memory whole; on PostgreSQL in one parameter."""
        self._conn.statements += 1
        self._sources.append((source, source.tell()))
        self._conn.driver.write_blob(table, column, rowid, source)

    def after_commit(self, callback: Callable[[], None]) -> None:
        """Run `callback` once this job's transaction has committed (on the event loop)."""
        self._after.append(callback)

    def before_end(self, key: object, callback: Callable[[], Awaitable[None]]) -> None:
        """Run `callback` (a coroutine function over this `Tx`) when the job has returned,
        still inside its transaction; a later registration under the same `key` replaces
        an earlier one."""
        self._before_end[key] = callback

    async def _end(self) -> None:
        while self._before_end:
            callbacks = list(self._before_end.values())
            self._before_end.clear()
            for callback in callbacks:
                await callback()


class Reader:
    """A read-only view over a reader connection; its methods never suspend."""

    def __init__(self, conn: _Connection) -> None:
        self._conn = conn

    @property
    def backend(self) -> str:
        """`sqlite` or `postgresql`, for the few statements that differ (kept in storage)."""
        return self._conn.driver.name

    async def fetchone(self, sql: str, params: Iterable[Any] = ()) -> sqlite3.Row | None:
        return cast("sqlite3.Row | None", self._conn.execute(sql, params).fetchone())

    async def fetchall(self, sql: str, params: Iterable[Any] = ()) -> list[sqlite3.Row]:
        return cast("list[sqlite3.Row]", self._conn.execute(sql, params).fetchall())


class JobSuspended(RuntimeError):
    """A storage job awaited something other than its `Tx` or `Reader`."""


def _drive(job: Awaitable[T]) -> T:
    """Run a job to its end on the calling thread. It awaits only methods that never
    suspend, so its first step finishes it; one that suspends is closed and refused."""
    steps = job.__await__()
    try:
        next(steps)
    except StopIteration as stop:
        result: T = stop.value
        return result
    close = getattr(steps, "close", None)
    if close is not None:
        close()
    raise JobSuspended("a storage job may await only its transaction or reader")


class _Connection:
    """A driver's connection, the one thread that uses it, and how many statements and
    jobs it ran (counted on that thread only)."""

    def __init__(self, driver: Driver, thread: ThreadPoolExecutor | None) -> None:
        self.driver = driver
        self._thread = thread
        self.statements = 0
        self.jobs = 0
        # Set when a statement lost a race to another transaction (the writer's batch is
        # then run again, even where a job caught the error).
        self.lost_race: BaseException | None = None

    def execute(self, sql: str, params: Iterable[Any]) -> Any:
        self.statements += 1
        return self.watch(self.driver.execute, sql, params)

    def watch(self, fn: Callable[[str, Iterable[Any]], T], sql: str, params: Iterable[Any]) -> T:
        """`fn(sql, params)`, noting a lost race in `lost_race`."""
        try:
            return fn(sql, params)
        except self.driver.retry_errors as exc:
            self.lost_race = exc
            raise

    def job(self, fn: Callable[[Reader], Awaitable[T]]) -> T:
        """On this connection's thread: one read job, whole."""
        self.jobs += 1
        return _drive(fn(Reader(self)))

    @classmethod
    async def open(cls, connect: Callable[[], Driver], name: str) -> _Connection:
        """A connection made by `connect` on a new thread of its own."""
        thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix=name)
        try:
            driver = await asyncio.get_running_loop().run_in_executor(thread, connect)
        except BaseException:
            thread.shutdown(wait=False)
            raise
        return cls(driver, thread)

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._thread, fn, *args)

    async def close(self) -> None:
        if self._thread is None:  # the event loop's own connection
            self.driver.close()
            return
        try:
            await self.run(self.driver.close)
        finally:
            self._thread.shutdown(wait=False)


@dataclass
class _Job:
    fn: Callable[[Tx], Awaitable[Any]]
    future: asyncio.Future[Any]
    tx: Tx | None = None
    result: Any = None
    error: BaseException | None = None
    done: bool = field(default=False)
    probe: bool = False


class Database:
    """Owns the connections; open with `await Database.open(path or url)`, close with
    `close()`. `path` is the SQLite file (None on PostgreSQL); `url` the PostgreSQL
    database's URL (None on SQLite)."""

    def __init__(
        self,
        path: Path | None,
        writer: _Connection,
        readers: list[_Connection],
        schema_version: int,
        inline: _Connection | None = None,
        url: str | None = None,
    ) -> None:
        """`inline`: the event loop's own reader connection (made on the loop's thread),
        for `read_now`; without it `read_now` hands off like `read`."""
        self.path = path
        self.url = url
        self.schema_version = schema_version
        self._writer = writer
        self._readers = readers
        self._inline = inline
        self._next_reader = 0
        self._queue: asyncio.Queue[_Job] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None
        self._closed = False
        self.commits = 0
        self.failure: StorageUnavailable | None = None
        self._recovered = asyncio.Event()

    @property
    def backend(self) -> str:
        """`sqlite` or `postgresql`."""
        return "sqlite" if self.url is None else "postgresql"

    @property
    def location(self) -> str:
        """Where the data is, fit for a log line: the file, or the URL without password."""
        return str(self.path) if self.url is None else urls.redact(self.url)

    @classmethod
    async def open(
        cls,
        target: Path | str,
        *,
        synchronous: str = "FULL",
        readers: int = 2,
        upgrade: bool = True,
    ) -> Database:
        """Open and migrate the database: the SQLite file at `target` (created if
        needed), or the PostgreSQL database `target` names (a `postgresql://` URL).

        Without `upgrade`, an SQLite file is opened only when it exists at this build's
        schema, and is neither created nor migrated: any other version raises
        SchemaTooOld or SchemaTooNew (see `check_schema`) having changed nothing."""
        if urls.is_url(target):
            return await cls._open_postgres(str(target), readers)
        path = Path(target)
        connect = functools.partial(sqlite_driver.Driver, path, synchronous)
        try:
            version = await asyncio.to_thread(migrate if upgrade else check_schema, path)
            writer = await _Connection.open(connect, "storage-writer")
            reader_conns = [
                await _Connection.open(connect, f"storage-reader-{n}") for n in range(readers)
            ]
            inline = _Connection(connect(), None)
        except sqlite3.Error as exc:
            raise StorageUnavailable(f"cannot open database {path}: {exc}") from exc
        except OSError as exc:
            raise StorageUnavailable(
                f"database {path} is not writable ({exc.strerror})", "read_only"
            ) from exc
        return cls(path, writer, reader_conns, version, inline=inline)._start()

    @classmethod
    async def _open_postgres(cls, url: str, readers: int) -> Database:
        # psycopg and its libpq load here, for a PostgreSQL database only.
        from storage import postgres

        connect = functools.partial(postgres.Driver, url)
        opened: list[_Connection] = []
        try:
            version = await asyncio.to_thread(migrations.apply_postgres, url)
            for name in ("storage-writer", *(f"storage-reader-{n}" for n in range(readers))):
                opened.append(await _Connection.open(connect, name))
                opened[-1].driver.run("SELECT 1")
        except postgres.Driver.errors as exc:
            for conn in opened:
                await conn.close()
            raise StorageUnavailable(
                f"cannot open database {urls.redact(url)}: {exc}", "cannot_open"
            ) from exc
        return cls(None, opened[0], opened[1:], version, url=url)._start()

    def _start(self) -> Database:
        self._task = asyncio.create_task(self._run_writer(), name="storage-writer")
        return self

    async def size_bytes(self) -> int:
        """What the data takes on disk now: the SQLite file with its write-ahead log, or
        the PostgreSQL database's size as its server reports it."""
        if self.path is None:
            row = await self.read(
                lambda r: r.fetchone("SELECT pg_database_size(current_database()) AS n")
            )
            return 0 if row is None else int(row["n"])
        total = 0
        for suffix in ("", "-wal", "-shm"):
            with contextlib.suppress(OSError):
                total += os.stat(f"{self.path}{suffix}").st_size
        return total

    async def checkpoint(self) -> None:
        """Fold SQLite's write-ahead log back into the database file where no reader
        holds it (PASSIVE); the PostgreSQL server checkpoints on its own."""
        if self.path is not None:
            await self.read(lambda r: r.fetchone("PRAGMA wal_checkpoint(PASSIVE)"))

    def counters(self) -> dict[str, int]:
        """What this database did since it opened: group commits, write and read jobs, and
        the statements they ran, and how many read jobs were handed to a thread (the
        figures the benchmarks divide per turn)."""
        readers = [*self._readers, *([self._inline] if self._inline else [])]
        return {
            "commits": self.commits,
            "write_jobs": self._writer.jobs,
            "write_statements": self._writer.statements,
            "read_jobs": sum(r.jobs for r in readers),
            "read_statements": sum(r.statements for r in readers),
            # Read jobs handed to a reader thread (the others ran on the event loop).
            "read_hops": sum(r.jobs for r in self._readers),
        }

    async def write(self, fn: Callable[[Tx], Awaitable[T]], *, probe: bool = False) -> T:
        """Run `fn` in a group-committed transaction; return once it is durable.

        A `probe` (a health check's small write) does not by its success clear `failure`:
        it may fit where a real write did not."""
        if self._closed:
            raise StorageUnavailable("database is closed")
        future: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        await self._queue.put(_Job(fn, future, probe=probe))
        return await future

    async def write_durably(self, fn: Callable[[Tx], Awaitable[T]]) -> T:
        """`write(fn)`, retried while the store is unavailable (disk full, read-only):
        each retry runs as soon as another write commits, or after a backoff of at most
        `RETRY_MAX_SECONDS`. For writes that must not be lost to a passing fault (a
        turn's settlement). Other errors, and a closed database, are raised at once."""
        delay = 0.25
        while True:
            try:
                return await self.write(fn)
            except StorageUnavailable as exc:
                if self._closed:
                    raise
                log.warning("storage unavailable (%s); retrying a write", exc.reason)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._recovered.wait(), delay)
            delay = min(delay * 2, RETRY_MAX_SECONDS)

    async def read(self, fn: Callable[[Reader], Awaitable[T]]) -> T:
        if self._closed:
            raise StorageUnavailable("database is closed")
        conn = self._readers[self._next_reader % len(self._readers)]
        self._next_reader += 1
        try:
            try:
                return await conn.run(conn.job, fn)
            except conn.driver.errors:
                # A read found its connection closed by the server (a restart since its
                # last use): reading has no effect, so it runs once more on a new one.
                if not conn.driver.lost():
                    raise
                return await conn.run(conn.job, fn)
        except conn.driver.errors as exc:
            raise conn.driver.translate(exc) from exc

    async def read_now(self, fn: Callable[[Reader], Awaitable[T]]) -> T:
        """`read(fn)` run at once on the event loop's own reader connection: no hand-off,
        but the loop waits for it. Only for small reads an index bounds."""
        if self._closed:
            raise StorageUnavailable("database is closed")
        if self._inline is None:
            return await self.read(fn)
        driver = self._inline.driver
        try:
            return self._inline.job(fn)
        except driver.errors as exc:
            raise driver.translate(exc) from exc

    async def close(self) -> None:
        """Finish queued writes, then close every connection."""
        if self._closed:
            return
        self._closed = True
        try:
            if self._task is not None:
                await self._queue.join()
                self._task.cancel()
                # asyncio.wait never raises the writer's own cancellation, so a cancellation
                # aimed at the caller is the only one that can leave here, and it does.
                await asyncio.wait({self._task})
                if not self._task.cancelled():
                    self._task.result()  # what the writer ended with, if it failed
        finally:
            for conn in (self._writer, *self._readers):
                await conn.close()
            if self._inline is not None:
                await self._inline.close()

    async def _run_writer(self) -> None:
        while True:
            batch = [await self._queue.get()]
            while len(batch) < MAX_BATCH and not self._queue.empty():
                batch.append(self._queue.get_nowait())
            try:
                await self._commit_batch(batch)
            finally:
                for _ in batch:
                    self._queue.task_done()

    async def _commit_batch(self, batch: list[_Job]) -> None:
        driver = self._writer.driver
        try:
            fault = await self._writer.run(self._run_batch, batch)
        except driver.errors as exc:
            error = driver.translate(exc, "commit failed")
            fault = next(
                (job.error for job in batch if isinstance(job.error, StorageUnavailable)),
                None,
            )
            error = fault or error
            log.error("storage commit failed: %s", error)
            self._failed(error)
            for job in batch:
                if not job.future.done():
                    job.future.set_exception(error)
            return
        if fault is not None:
            self._failed(fault)
        elif any(not job.probe and job.error is None for job in batch):
            self._succeeded()
        for job in batch:
            if job.future.done():
                continue
            if job.error is not None:
                job.future.set_exception(job.error)
                continue
            if job.tx is not None:
                for callback in job.tx._after:
                    try:
                        callback()
                    except Exception:
                        log.exception("after-commit callback failed")
            job.future.set_result(job.result)

    def _run_batch(self, batch: list[_Job]) -> StorageUnavailable | None:
        """On the writer's thread: the batch in one transaction, run again whole while it
        loses a race to another transaction (at most `BATCH_ATTEMPTS` runs). Returns the
        disk fault a job met, if any; raises what the COMMIT raised (after rolling the
        transaction back)."""
        driver = self._writer.driver
        attempt = 1
        while True:
            try:
                return self._try_batch(batch)
            except driver.errors as exc:
                if attempt >= BATCH_ATTEMPTS or not isinstance(exc, driver.retry_errors):
                    raise
                if not _rewind(batch):
                    raise
                log.warning(
                    "a storage batch of %d jobs lost a race to another transaction (%s);"
                    " running it again (attempt %d)",
                    len(batch),
                    type(exc).__name__,
                    attempt + 1,
                )
            attempt += 1

    def _try_batch(self, batch: list[_Job]) -> StorageUnavailable | None:
        """Every job of `batch` in its own savepoint, then one COMMIT; a job alone in its
        batch, where a failed statement undoes only itself, is the transaction itself:
        committed, or rolled back whole when it raises."""
        driver = self._writer.driver
        self._writer.lost_race = None
        fault: StorageUnavailable | None = None
        try:
            driver.run(driver.begin_sql)
            if len(batch) == 1 and driver.statement_atomic:
                return self._run_alone(batch[0])
            for index, job in enumerate(batch):
                if job.future.cancelled():
                    continue
                fault = self._run_job(index, job) or fault
            self._commit()
        except driver.errors:
            with contextlib.suppress(*driver.errors):
                driver.run("ROLLBACK")
            raise
        return fault

    def _run_alone(self, job: _Job) -> StorageUnavailable | None:
        """The batch's only job as its whole transaction (begun): committed when it
        succeeds, rolled back when it raises (its COMMIT then never runs); returns the disk
        fault it met."""
        driver = self._writer.driver
        if job.future.cancelled():
            driver.run("ROLLBACK")
            return None
        self._drive_job(job)
        if job.error is not None:
            driver.run("ROLLBACK")
            return job.error if isinstance(job.error, StorageUnavailable) else None
        self._commit()
        return None

    def _commit(self) -> None:
        self._writer.driver.run("COMMIT")
        self.commits += 1  # only what committed: a lone job that raised was rolled back

    def _run_job(self, index: int, job: _Job) -> StorageUnavailable | None:
        """One job in its savepoint; returns the disk fault it met."""
        driver = self._writer.driver
        savepoint = f"job{index}"
        driver.run(f"SAVEPOINT {savepoint}")
        self._drive_job(job)
        if job.error is not None:
            driver.run(f"ROLLBACK TO SAVEPOINT {savepoint}")
        driver.run(f"RELEASE SAVEPOINT {savepoint}")
        return job.error if isinstance(job.error, StorageUnavailable) else None

    def _drive_job(self, job: _Job) -> None:
        """Run `job` to its end on a new `Tx`, keeping its result or its error. A lost race
        is raised (the whole transaction is lost), even when the job caught it."""
        driver = self._writer.driver
        job.tx, job.result, job.error = Tx(self._writer), None, None
        self._writer.jobs += 1
        try:
            job.result = _drive(job.fn(job.tx))
            _drive(job.tx._end())
        except Exception as exc:
            job.error = driver.translate(exc) if isinstance(exc, driver.errors) else exc
        if self._writer.lost_race is not None:
            raise self._writer.lost_race

    def _failed(self, error: StorageError) -> None:
        if isinstance(error, StorageUnavailable):
            self.failure = error
            self._recovered.clear()

    def _succeeded(self) -> None:
        self.failure = None
        self._recovered.set()


def _rewind(batch: list[_Job]) -> bool:
    """Put back every blob source the batch's jobs read to where each was read from;
    False when one cannot be (the batch cannot then run again)."""
    for job in batch:
        for source, position in job.tx._sources if job.tx is not None else ():
            if not source.seekable():
                return False
            source.seek(position)
    return True


def check_schema(path: Path, *, older: bool = False) -> int:
    """The schema version of the existing SQLite file at `path`, read without changing
    it (nothing created, nothing migrated), when this build works on it as it is (see
    `migrations.check`: an older one only with `older`); else SchemaTooOld or
    SchemaTooNew. A file that cannot be read as a database raises StorageUnavailable."""
    try:
        conn = sqlite3.connect(f"{Path(path).absolute().as_uri()}?mode=ro", uri=True)
        try:
            version = migrations.recorded(conn)
        finally:
            conn.close()
    except sqlite3.Error as exc:
        raise StorageUnavailable(f"cannot read database {path}: {exc}", "cannot_open") from exc
    return migrations.check(version, older=older)


def migrate(path: Path) -> int:
    """Create the SQLite file at `path` if needed and apply its pending migrations, without
    opening a `Database`; return the schema version. `Database.open` does this first
    itself; a caller may do it earlier, on a thread of its own, so that the open then finds
    nothing left to apply. Raises sqlite3.Error, OSError or SchemaTooNew."""
    # The database holds prompts and outputs: private to its owner. SQLite gives the -wal
    # and -shm files the same permissions as the database file.
    path = Path(path)
    path.touch(mode=0o600, exist_ok=True)
    path.chmod(0o600)
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        # Takes effect only on a new, empty file: freed pages can then be returned to the
        # filesystem without rewriting the database (`corebox gc`).
        conn.execute("PRAGMA auto_vacuum=INCREMENTAL")
        conn.execute("PRAGMA journal_mode=WAL")
        version = migrations.apply(conn)
        # A database that opens but cannot be written (read-only file or filesystem) is
        # refused here, at start, not at the first request.
        conn.execute("BEGIN IMMEDIATE")
        conn.execute(
            "UPDATE schema_version SET applied_at = applied_at WHERE version = ?", (version,)
        )
        conn.execute("COMMIT")
        return version
    finally:
        conn.close()
