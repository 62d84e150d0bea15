"""`corebox serve` as a process: first-start credentials, start-up failures, shutdown."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import sqlite3
import stat
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.conftest import ROOT, free_port, start_server
from tests.support.postgres import sqlite_only


def _serve(
    args: list[str], env_extra: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("COREBOX_")}
    env["PYTHONPATH"] = str(ROOT)
    env.update(env_extra or {})
    return subprocess.run(
        [sys.executable, "-m", "allinone", "serve", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


def test_busy_port_exits_with_one_clear_line(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        done = _serve(["--port", str(port), "--data-dir", str(tmp_path / "d")])
    assert done.returncode != 0
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, done.stderr
    assert str(port) in lines[0] and "in use" in lines[0]


@sqlite_only("several Core processes share a PostgreSQL database by design")
def test_a_second_server_on_the_same_database_exits_with_one_clear_line(
    tmp_path: Path,
) -> None:
    """One process serves an SQLite database: a second `serve` on the same data directory
    stops before it touches the database (it would recover, so fail, the first one's
    running turns); once the first is gone, even by kill -9, the next one starts."""
    data_dir = tmp_path / "data"
    first = start_server(data_dir)
    try:
        done = _serve(["--port", str(free_port()), "--data-dir", str(data_dir)])
        assert done.returncode != 0
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        assert len(lines) == 1, done.stderr
        assert str(data_dir / "corebox.db") in lines[0] and "another corebox" in lines[0]
        assert f"process {first.process.pid}" in lines[0]
        with urllib.request.urlopen(f"{first.base_url}/readyz", timeout=10) as ready:
            assert ready.status == 200
    finally:
        first.process.send_signal(signal.SIGKILL)
        first.process.wait(timeout=10)
    start_server(data_dir).stop()


def test_unwritable_data_dir_exits_with_one_clear_line(tmp_path: Path) -> None:
    if os.geteuid() == 0:
        blocked = tmp_path / "file-not-dir"
        blocked.write_text("x")
        target = blocked / "data"  # a path under a regular file cannot be created, even by root
    else:
        blocked = tmp_path / "ro"
        blocked.mkdir(mode=0o500)
        target = blocked / "data"
    done = _serve(["--port", str(free_port()), "--data-dir", str(target)])
    assert done.returncode != 0
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, done.stderr
    assert "not writable" in lines[0] and str(target) in lines[0]


def test_unwritable_database_file_exits_with_one_clear_line(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    start_server(data_dir).stop()
    database = data_dir / "corebox.db"
    if shutil.which("chattr") is None:
        pytest.skip("chattr is not installed")
    # The immutable attribute refuses writes to root too (file modes do not).
    if subprocess.run(["chattr", "+i", str(database)], check=False).returncode != 0:
        pytest.skip("this filesystem has no immutable attribute")
    try:
        done = _serve(["--port", str(free_port()), "--data-dir", str(data_dir)])
    finally:
        subprocess.run(["chattr", "-i", str(database)], check=True)
    assert done.returncode == 1
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, done.stderr
    assert "not writable" in lines[0] and str(database) in lines[0]


def test_first_start_prints_and_saves_a_key_that_is_stored_only_as_a_digest(tmp_path: Path) -> None:
    data = tmp_path / "data"
    server = start_server(data, api_key=None)
    try:
        key_file = data / "default-project.key"
        key = key_file.read_text().strip()
        assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
        assert key in server.log.read_text()  # printed once at first start
        conn = sqlite3.connect(data / "corebox.db")
        digests = [row[0] for row in conn.execute("SELECT digest FROM api_keys")]
        conn.close()
        assert len(digests) == 1 and key not in digests[0]
        raw_db = b"".join(p.read_bytes() for p in data.iterdir() if p.name.startswith("corebox.db"))
        assert key.encode() not in raw_db
    finally:
        assert server.stop() == 0
    # A second start keeps the project and never prints the key again.
    log_before = server.log.read_text()
    again = start_server(data, api_key=None, port=server.port)
    try:
        assert again.log.read_text().count(key) == log_before.count(key)
    finally:
        again.stop()


def test_sigterm_shuts_down_in_order_within_ten_seconds(tmp_path: Path) -> None:
    server = start_server(tmp_path / "data")
    started = time.monotonic()
    server.process.send_signal(signal.SIGTERM)
    assert server.process.wait(timeout=10) == 0
    assert time.monotonic() - started < 10
    log = server.log.read_text()
    assert "shutting down" in log


@sqlite_only("a PostgreSQL database loads its driver")
def test_a_ready_server_has_not_loaded_what_start_up_does_not_need(tmp_path: Path) -> None:
    """psycopg and its libpq load only for a PostgreSQL database, and the cipher that
    seals secrets (cryptography's native library) at the first seal or open: a server on
    SQLite, once ready, has mapped neither into the process."""
    server = start_server(tmp_path / "data")
    try:
        maps = Path(f"/proc/{server.process.pid}/maps").read_text()
    finally:
        server.stop()
    assert "/psycopg" not in maps and "libpq" not in maps
    assert "/cryptography" not in maps
    assert "/sqlite" in maps or "_sqlite3" in maps  # the check sees the libraries it looks for


@pytest.mark.parametrize("sig", [signal.SIGINT])
def test_sigint_also_stops_cleanly(tmp_path: Path, sig: signal.Signals) -> None:
    server = start_server(tmp_path / "data")
    server.process.send_signal(sig)
    assert server.process.wait(timeout=10) == 0


def test_the_ready_signal_reports_a_server_that_exited_before_it_was_ready(
    tmp_path: Path,
) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        with pytest.raises(RuntimeError, match="exited early"):
            start_server(tmp_path / "data", port=busy.getsockname()[1])


def test_serve_imports_neither_other_commands_nor_unused_parsers() -> None:
    """`corebox serve` (its command line, then the server's code) imports neither the
    other commands' modules, nor h11 (the httptools protocol runs), nor tomllib (no
    configuration file to read here), nor tarfile (only a turn that captures or exports
    artifacts reads or writes a tar)."""
    code = (
        "import contextlib, io, sys\n"
        "from allinone import cli\n"
        "with contextlib.suppress(SystemExit), contextlib.redirect_stdout(io.StringIO()):\n"
        "    cli.main(['serve', '--help'])\n"
        "import allinone.app\n"
        "print(' '.join(sorted(sys.modules)))\n"
    )
    # Without coverage's subprocess measurement, which reads its settings with tomllib.
    prefixes = ("COREBOX_", "COVERAGE_")
    env = {k: v for k, v in os.environ.items() if not k.startswith(prefixes)}
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={**env, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    loaded = set(done.stdout.split())
    assert {"allinone.app", "allinone.cli", "uvicorn"} <= loaded  # it sees what it looks for
    others = {"allinone.admin", "allinone.data_commands", "allinone.receiver.commands"}
    assert not (others | {"h11", "tomllib", "tarfile"}) & loaded
