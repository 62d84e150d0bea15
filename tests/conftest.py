"""Shared fixtures: a real `corebox serve` process on a free loopback port."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
API_KEY = "test-key"


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


def wait_ready(base_url: str, process: subprocess.Popen[bytes], deadline: float = 30.0) -> None:
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        if process.poll() is not None:
            raise RuntimeError(f"server exited early with {process.returncode}")
        try:
            with urllib.request.urlopen(f"{base_url}/readyz", timeout=2) as reply:
                if reply.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError):
            pass
        time.sleep(0.05)
    raise TimeoutError("server did not become ready")


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
    env.update(extra_env or {})
    log = data_dir.parent / f"{data_dir.name}.log"
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
            ],
            stdout=handle,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=str(data_dir.parent),
        )
    server = Server(port, data_dir, process, log)
    try:
        wait_ready(server.base_url, process)
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
