"""What `corebox serve` checks and holds before anything else starts (a writable data
directory and its listening socket) and the steps of start-up that `App` sequences: the
HTTP server's start, the ready signal, independent steps run together. A failure is a
`StartupError`, whose message is the one line the user sees.

`Warmup` starts the slow part of opening the data directory (creating it, creating or
migrating the SQLite database) on a thread of its own as soon as the configuration is
known, so that it overlaps the import of the server's code (SQLite works without holding
the interpreter lock)."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import fcntl
import logging
import os
import socket
import threading
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from allinone.config import Config
from allinone.core.tasks import cancel_and_wait
from storage.database import migrate

if TYPE_CHECKING:
    from allinone.app import Parts
    from allinone.app import _Server as HttpServer
    from allinone.core.hub import Hub
    from allinone.lifecycle import Lifecycle

log = logging.getLogger(__name__)

DATABASE_FILE = "corebox.db"


class StartupError(Exception):
    """Start-up cannot continue; the message is the one line the user sees."""


class DatabaseLock:
    """The one serving process of an SQLite database: an exclusive lock (flock) on the
    file beside it named `<database>.lock`, which holds the server's process id. A second
    `corebox serve` on the same database stops at start-up instead of recovering (and so
    failing) the running turns of the first. The kernel releases the lock when its
    process ends, kill -9 included; child processes do not inherit it. PostgreSQL
    databases take no such lock: several Core processes share one by design."""

    def __init__(self, fd: int) -> None:
        self._fd: int | None = fd

    @classmethod
    def acquire(cls, database: Path) -> DatabaseLock:
        """Hold the lock of `database`, or raise `StartupError` naming who holds it."""
        path = database.with_name(database.name + ".lock")
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        except OSError as exc:
            raise StartupError(f"cannot lock the database {database} ({exc.strerror})") from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            held = exc.errno in (errno.EAGAIN, errno.EACCES)
            holder = os.read(fd, 32).decode("ascii", "replace").strip() if held else ""
            os.close(fd)
            if not held:
                raise StartupError(f"cannot lock the database {database} ({exc.strerror})") from exc
            raise StartupError(
                f"the database {database} is served by another corebox (process "
                f"{holder or 'unknown'}); stop it first, or give this one another --data-dir"
            ) from exc
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        return cls(fd)

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the descriptor releases the lock
            self._fd = None

    @classmethod
    @contextlib.contextmanager
    def held(cls, database: Path, refused: Callable[[str], Exception]) -> Iterator[None]:
        """Hold the lock of `database` while the block runs, for a command that must not
        work on a served database (restore replaces its files; migrate-to-postgres copies
        it, and would leave behind what its server acknowledged afterwards), and so that
        no server starts on it meanwhile; raises `refused(message)` when it is served."""
        try:
            lock = cls.acquire(database)
        except StartupError as exc:
            raise refused(str(exc)) from exc
        try:
            yield
        finally:
            lock.release()


class Warmup:
    """Creates the data directory, takes its SQLite database's `DatabaseLock` and creates
    or migrates the database (not a PostgreSQL one) on a thread started by the
    constructor. It only saves time: `App` takes the lock it holds (`take_lock`) and
    repeats the other steps after `wait()` (finding nothing left to do) and reports their
    failures there, so a failure here is only logged at debug level; a database another
    process serves is not migrated."""

    def __init__(self, config: Config) -> None:
        self._database = None if config.database_url else config.data_dir / DATABASE_FILE
        self._lock: DatabaseLock | None = None
        self._thread = threading.Thread(
            target=self._warm_up, args=(config.data_dir,), name="startup-warmup", daemon=True
        )
        self._thread.start()

    def wait(self) -> None:
        """Block until the thread is done (at once when it already is)."""
        self._thread.join()

    def take_lock(self) -> DatabaseLock | None:
        """After `wait()`: the lock the thread took on the data directory's database
        (none for a database named by the configuration), now the caller's."""
        lock, self._lock = self._lock, None
        return lock

    def _warm_up(self, data_dir: Path) -> None:
        try:
            prepare_data_dir(data_dir)
            if self._database is not None:
                self._lock = DatabaseLock.acquire(self._database)
                migrate(self._database)
        except Exception as exc:  # reported when App repeats the step
            log.debug("start-up warm-up stopped: %s", type(exc).__name__)


async def together(*steps: Awaitable[Any]) -> list[Any]:
    """Run independent start-up `steps` concurrently and return their results in order
    once all have ended; the first failure (in argument order) is raised then, so no step
    is left running."""
    results = await asyncio.gather(*steps, return_exceptions=True)
    for result in results:
        if isinstance(result, BaseException):
            raise result
    return results


def prepare_data_dir(path: Path) -> None:
    try:
        path.mkdir(parents=True, exist_ok=True, mode=0o700)  # a new data dir is private
        probe = path / ".write-probe"
        probe.write_text("ok", encoding="utf-8")
        probe.unlink()
    except OSError as exc:
        raise StartupError(f"data directory {path} is not writable ({exc.strerror})") from exc


def bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP, not 0: asyncio only sets TCP_NODELAY on accepted sockets whose protocol
    # says TCP, and without it keep-alive clients wait ~40 ms per response (Nagle).
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise StartupError(
                f"port {port} on {host} is already in use (another corebox? `corebox status`"
                " tells); choose another with --port"
            ) from exc
        raise StartupError(f"cannot listen on {host}:{port} ({exc.strerror})") from exc
    sock.listen(512)
    sock.set_inheritable(True)
    return sock


async def start_server(
    life: Lifecycle, server: HttpServer, hub: Hub, sock: socket.socket
) -> asyncio.Task[None]:
    """Serve on the bound socket; return the server's task once it listens. Stopping ends
    the hub's open streams first, then lets uvicorn finish its connections."""
    task = asyncio.create_task(server.serve(sockets=[sock]), name="http-server")
    life.own(task)

    async def graceful() -> None:
        server.should_exit = True
        await asyncio.wait({task})

    life.on_stop("http server", graceful)
    life.on_stop_sync("event hub", hub.close)
    listening = asyncio.create_task(server.listening.wait(), name="http-listening")
    await asyncio.wait({listening, task}, return_when=asyncio.FIRST_COMPLETED)
    await cancel_and_wait(listening)
    if not server.started:
        raise StartupError("the HTTP server stopped during start-up")
    return task


async def when_ready(parts: Parts, announce: Callable[[], None]) -> None:
    """Call `announce` once the health evidence says ready, re-checking on every change
    of the connected Runtimes (what readiness waits for after start-up)."""
    while True:
        changed = parts.registry.changed
        ready, _ = await parts.health.evidence(owner=False)
        if ready:
            announce()
            return
        await changed.wait()
