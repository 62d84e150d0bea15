"""Shared fixtures: a real `corebox serve` process on a free loopback port."""

from __future__ import annotations

import gc
import os
import select
import socket
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support import databases
from tests.support.postgres import (
    own_cluster,
    postgres_cluster,
    postgres_url,
    server_database,
    stop_shared,
)
from tests.support.sdk import close_opened

ROOT = Path(__file__).resolve().parent.parent
API_KEY = "test-key"

__all__ = ["own_cluster", "postgres_cluster", "postgres_url"]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Server:
    port: int
    data_dir: Path
    process: subprocess.Popen[bytes]
    log: Path

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stop(self, timeout: float = 15.0) -> int:
        if self.process.poll() is None:
            self.process.terminate()
        return self.process.wait(timeout)


def wait_ready(ready: int, process: subprocess.Popen[bytes], deadline: float = 30.0) -> None:
    """Block until the server writes its ready line to the pipe `ready` (read end; the
    server holds the write end through `--ready-fd`). End-of-file means it exited first."""
    try:
        readable, _, _ = select.select([ready], [], [], deadline)
        line = os.read(ready, 64) if readable else None
    finally:
        os.close(ready)
    if line is None:
        raise TimeoutError("server did not become ready")
    if not line.startswith(b"ready "):
        process.wait(timeout=deadline)
        raise RuntimeError(f"server exited early with {process.returncode}")


def start_server(
    data_dir: Path,
    *,
    api_key: str | None = API_KEY,
    port: int | None = None,
    extra_env: dict[str, str] | None = None,
    log_level: str = "info",
) -> Server:
    port = port or free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("COREBOX_")}
    env["PYTHONPATH"] = str(ROOT)
    if api_key is not None:
        env["COREBOX_API_KEY"] = api_key
    # The default project may bind self_hosted workspaces anywhere in the test run's
    # temporary tree (the data directory inside it stays unreachable).
    env["COREBOX_WORKSPACE_ROOTS"] = str(data_dir.parent.parent)
    # A server started again on the same data directory finds the same database.
    database = databases.url(data_dir) or server_database()
    if database is not None:
        env["COREBOX_DATABASE_URL"] = database
    env.update(extra_env or {})
    if env.get("COREBOX_DATABASE_URL"):
        databases.remember(data_dir, env["COREBOX_DATABASE_URL"])
    log = data_dir.parent / f"{data_dir.name}.log"
    ready, ready_w = os.pipe()
    with log.open("ab") as handle:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "allinone",
                "serve",
                "--port",
                str(port),
                "--data-dir",
                str(data_dir),
                "--log-level",
                log_level,
                "--ready-fd",
                str(ready_w),
            ],
            stdout=handle,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=str(data_dir.parent),
            pass_fds=(ready_w,),
        )
    os.close(ready_w)
    server = Server(port, data_dir, process, log)
    try:
        wait_ready(ready, process)
    except BaseException:
        server.stop()
        raise
    return server


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    base = tmp_path_factory.mktemp("corebox")
    running = start_server(base / "data")
    yield running
    running.stop()


@pytest.fixture
def fresh_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"


# A full collection scans every object the run holds (about 0.2 s here): one after each
# test would cost minutes, so each test gets a collection of the young generations (what
# it made and dropped, usually) and every FULL_COLLECTION_EVERY-th a full one.
FULL_COLLECTION_EVERY = 32
_torn_down = [0]


@pytest.fixture(autouse=True)
def _garbage_of_each_test_is_its_own() -> Iterator[None]:
    """Collect what each test left behind at its own teardown, so an object it failed to
    close (a socket, a client, a file) is reported against that test (or one of the few
    before it), not at a random later point in another one."""
    yield
    close_opened()
    _torn_down[0] += 1
    gc.collect(2 if _torn_down[0] % FULL_COLLECTION_EVERY == 0 else 1)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """The throw-away PostgreSQL server, if this run started one, goes with the run."""
    stop_shared()
