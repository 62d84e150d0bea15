"""A throw-away PostgreSQL server for the tests that run against the PostgreSQL backend.

`ensure_installed()` finds Debian's server binaries (`initdb`, `pg_ctl`, `postgres` in
/usr/lib/postgresql/NN/bin or on PATH) and installs the `postgresql` package with apt-get
when they are missing and this is a root shell; it returns None where neither works, and
the tests that need a server are then skipped.

`Cluster.start(bindir)` first stops the clusters of test processes that were killed
before they could stop their own (`sweep_abandoned`), then runs `initdb` into a fresh
temporary directory and starts the server on a free loopback port (and a Unix socket in
that directory), `fsync` on, as the `postgres` system user when the tests run as root
(the server refuses to run as root).
`Cluster.fresh_database()` creates an empty database (from `template0`, which is fast)
and returns its URL; `Cluster.stop()` stops the server and removes the directory.

`shared()` is the one cluster of this test process, started at its first use and stopped
by `stop_shared()` when the session ends (the `postgres_cluster` fixture is the same
one). With `COREBOX_TEST_BACKEND=postgresql`, every `corebox serve` the tests start
(`tests/conftest.py: start_server`) keeps its state in a fresh database on it.

Fixtures (registered for the whole suite from `tests/conftest.py`):
- `postgres_cluster` (session): the running cluster, or a skip when none can be had.
- `postgres_url` (function): the URL of a new, empty database on it.
"""

from __future__ import annotations

import contextlib
import glob
import itertools
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

PREFIX = "corebox-pg-"
OWNER_FILE = "owner.pid"
SUPERUSER = "corebox"
SYSTEM_USER = "postgres"
START_TIMEOUT_SECONDS = 60


def _find_bindir() -> Path | None:
    on_path = shutil.which("pg_ctl")
    if on_path is not None:
        resolved = Path(on_path).resolve().parent
        if (resolved / "initdb").exists() and (resolved / "postgres").exists():
            return resolved
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"), reverse=True)
    for candidate in candidates:
        bindir = Path(candidate).parent
        if (bindir / "initdb").exists() and (bindir / "postgres").exists():
            return bindir
    return None


def ensure_installed() -> Path | None:
    """The directory holding `initdb`, `pg_ctl` and `postgres`, installing Debian's
    `postgresql` package first when they are missing and apt-get can be used."""
    found = _find_bindir()
    if found is not None:
        return found
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        return None
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for command in (
        ["apt-get", "update", "-qq"],
        ["apt-get", "install", "-y", "-qq", "--no-install-recommends", "postgresql"],
    ):
        result = subprocess.run(command, env=env, capture_output=True, check=False)
        if result.returncode != 0:
            return None
    return _find_bindir()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def sweep_abandoned(bindir: Path) -> None:
    """Stop and remove the clusters whose test process is gone (killed before it could
    stop them); a cluster whose process still runs is left alone."""
    for root in Path(tempfile.gettempdir()).glob(f"{PREFIX}*"):
        try:
            owner = int((root / OWNER_FILE).read_text())
        except (OSError, ValueError):
            continue
        if _alive(owner):
            continue
        cluster = Cluster(bindir, root, 0, SYSTEM_USER if os.geteuid() == 0 else None)
        with contextlib.suppress(RuntimeError, OSError):
            cluster.stop()


class Cluster:
    """One running PostgreSQL server in a temporary directory of its own."""

    def __init__(self, bindir: Path, root: Path, port: int, as_user: str | None) -> None:
        self.bindir = bindir
        self.root = root
        self.port = port
        self._as_user = as_user
        self._names = itertools.count(1)

    @property
    def data(self) -> Path:
        return self.root / "data"

    @property
    def log(self) -> Path:
        return self.root / "server.log"

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://{SUPERUSER}@127.0.0.1:{self.port}/{database}"

    def _run(self, *argv: str) -> None:
        command = [str(self.bindir / argv[0]), *argv[1:]]
        if self._as_user is not None:
            command = ["runuser", "-u", self._as_user, "--", *command]
        result = subprocess.run(command, capture_output=True, check=False, cwd=self.root)
        if result.returncode != 0:
            detail = (result.stdout + result.stderr).decode(errors="replace")
            raise RuntimeError(f"{argv[0]} failed ({result.returncode}): {detail}")

    @classmethod
    def start(cls, bindir: Path) -> Cluster:
        """initdb and start a server; the caller owns it and must `stop()` it."""
        as_user = SYSTEM_USER if os.geteuid() == 0 else None
        sweep_abandoned(bindir)
        root = Path(tempfile.mkdtemp(prefix=PREFIX))
        (root / OWNER_FILE).write_text(str(os.getpid()))
        if as_user is not None:
            shutil.chown(root, user=as_user)
        cluster = cls(bindir, root, _free_port(), as_user)
        try:
            cluster._init_and_start()
        except BaseException:
            cluster.stop()
            raise
        return cluster

    def _init_and_start(self) -> None:
        # --no-sync only skips flushing initdb's own files; the server runs with fsync on.
        self._run(
            "initdb",
            "-D",
            str(self.data),
            "-U",
            SUPERUSER,
            "--auth=trust",
            "--encoding=UTF8",
            "--locale=C",
            "--no-sync",
        )
        self.resume()

    def halt(self) -> None:
        """Stop the server, keeping its data (`resume` starts it again)."""
        self._run("pg_ctl", "stop", "-D", str(self.data), "-m", "fast", "-w")

    def resume(self) -> None:
        """Start the server on its data directory and port."""
        options = " ".join(
            (
                f"-p {self.port}",
                "-c listen_addresses=127.0.0.1",
                f"-c unix_socket_directories={self.root}",
                "-c fsync=on",
                "-c synchronous_commit=on",
                "-c full_page_writes=on",
                "-c max_connections=200",
            )
        )
        self._run(
            "pg_ctl",
            "start",
            "-D",
            str(self.data),
            "-l",
            str(self.log),
            "-w",
            "-t",
            str(START_TIMEOUT_SECONDS),
            "-o",
            options,
        )

    def fresh_database(self) -> str:
        """Create a new, empty database and return its URL."""
        name = f"test_{os.getpid()}_{next(self._names)}"
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}" TEMPLATE template0')
        return self.url(name)

    def stop(self) -> None:
        """Stop the server (fast shutdown) and remove its directory."""
        try:
            if (self.data / "postmaster.pid").exists():
                self._run("pg_ctl", "stop", "-D", str(self.data), "-m", "fast", "-w")
        finally:
            shutil.rmtree(self.root, ignore_errors=True)


BACKEND_VARIABLE = "COREBOX_TEST_BACKEND"
_shared: list[Cluster] = []


def shared() -> Cluster | None:
    """This process's cluster, started at the first call; None where PostgreSQL cannot
    be installed."""
    if not _shared:
        bindir = ensure_installed()
        if bindir is None:
            return None
        _shared.append(Cluster.start(bindir))
    return _shared[0]


def stop_shared() -> None:
    while _shared:
        _shared.pop().stop()


def server_database() -> str | None:
    """A fresh database URL for a `corebox serve` when the tests run on PostgreSQL
    (`COREBOX_TEST_BACKEND=postgresql`), else None (the data directory's SQLite)."""
    if os.environ.get(BACKEND_VARIABLE, "sqlite") != "postgresql":
        return None
    cluster = shared()
    if cluster is None:
        raise RuntimeError(f"{BACKEND_VARIABLE}=postgresql but PostgreSQL cannot be installed")
    return cluster.fresh_database()


def sqlite_only(reason: str) -> pytest.MarkDecorator:
    """Marks a test of what only the embedded SQLite store has (its files, their faults),
    skipped when the servers run on PostgreSQL."""
    return pytest.mark.skipif(
        os.environ.get(BACKEND_VARIABLE, "sqlite") == "postgresql", reason=f"SQLite only: {reason}"
    )


@pytest.fixture(scope="session")
def postgres_cluster() -> Iterator[Cluster]:
    cluster = shared()
    if cluster is None:
        pytest.skip("PostgreSQL is not installed and cannot be installed here")
    yield cluster


@pytest.fixture
def postgres_url(postgres_cluster: Cluster) -> str:
    return postgres_cluster.fresh_database()


@pytest.fixture
def own_cluster() -> Iterator[Cluster]:
    """A throw-away PostgreSQL server of the test's own, for a test that stops it."""
    bindir = ensure_installed()
    if bindir is None:
        pytest.skip("PostgreSQL is not installed and cannot be installed here")
    cluster = Cluster.start(bindir)
    try:
        yield cluster
    finally:
        cluster.stop()
