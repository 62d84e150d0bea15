"""`corebox doctor` as a process: a verdict, a fix for each failure, and an exit code
that says whether a session can run; plus the checks themselves on real files."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from allinone import doctor
from tests.api.support import http
from tests.conftest import API_KEY, ROOT, Server, free_port, start_server
from tests.support.model_server import MODEL, ModelServer, Reply


def _doctor(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("COREBOX_")}
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.run(
        [sys.executable, "-m", "allinone", "doctor", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def _base_args(tmp_path: Path) -> list[str]:
    roots = tmp_path / "work"
    roots.mkdir(exist_ok=True)
    return [
        "--data-dir",
        str(tmp_path / "data"),
        "--port",
        str(free_port()),
        "--workspace-root",
        str(roots),
    ]


def test_a_dead_model_endpoint_fails_naming_the_check_and_its_fix(tmp_path: Path) -> None:
    dead = f"http://127.0.0.1:{free_port()}/v1"
    done = _doctor(*_base_args(tmp_path), "--model-base-url", dead, "--model", MODEL)
    assert done.returncode == 1, done.stdout + done.stderr
    failing = [line for line in done.stdout.splitlines() if line.startswith("FAIL")]
    assert len(failing) == 1 and "model endpoint" in failing[0], done.stdout
    assert failing[0].endswith("is unreachable: connection refused"), failing[0]
    assert "fix: start the model server" in done.stdout
    assert "verdict: not ready: model endpoint failed" in done.stdout


@pytest.mark.parametrize("protocol", ["chat_completions", "responses"])
def test_everything_healthy_exits_zero(tmp_path: Path, protocol: str) -> None:
    with ModelServer().running() as model:
        model.queue(Reply.say("OK"))
        done = _doctor(
            *_base_args(tmp_path),
            "--model-base-url",
            model.base_url,
            "--model",
            MODEL,
            "--model-protocol",
            protocol,
        )
        suffix = "/chat/completions" if protocol == "chat_completions" else "/responses"
        assert [(seen.path.endswith(suffix), seen.body["model"]) for seen in model.requests] == [
            (True, MODEL)
        ]
    assert done.returncode == 0, done.stdout + done.stderr
    assert "verdict: healthy" in done.stdout
    assert not (tmp_path / "data").exists()  # doctor changes nothing


def test_a_model_that_refuses_the_key_names_the_key_fix(tmp_path: Path) -> None:
    with ModelServer().running() as model:
        model.queue(Reply.fail(401, "invalid_api_key"))
        done = _doctor(*_base_args(tmp_path), "--model-base-url", model.base_url, "--json")
    assert done.returncode == 1
    checks = {c["name"]: c for c in json.loads(done.stdout)["checks"]}
    assert not checks["model endpoint"]["ok"]
    assert "COREBOX_MODEL_API_KEY" in checks["model endpoint"]["fix"]


def test_against_a_running_server_reads_its_readiness(server: Server) -> None:
    done = _doctor("--data-dir", str(server.data_dir), "--url", server.base_url, "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    names = [c["name"] for c in json.loads(done.stdout)["checks"]]
    assert {"server storage", "server runtime", "server setup"} <= set(names)
    assert "port" not in names


def test_the_port_a_server_holds_is_reported_in_use(server: Server) -> None:
    check = doctor.port_check("127.0.0.1", server.port)
    assert not check.ok and "--url" in check.fix


def test_private_files_and_directories_are_required(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    (data_dir / "secrets").mkdir(parents=True, mode=0o700)
    data_dir.chmod(0o755)
    assert doctor.data_dir_check(data_dir).fix == f"chmod 700 {data_dir}"
    data_dir.chmod(0o700)
    assert doctor.data_dir_check(data_dir).ok
    key = data_dir / "secrets" / "core.key"
    key.write_text("cbc-0123456789abcdef")
    key.chmod(0o644)
    check = doctor.secrets_check(data_dir)
    assert not check.ok and check.fix == f"chmod 600 {key}"
    key.chmod(0o600)
    assert doctor.secrets_check(data_dir).ok


def test_a_database_from_a_newer_build_fails(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    with sqlite3.connect(data_dir / doctor.DATABASE_FILE) as conn:
        conn.execute("CREATE TABLE schema_version (version INTEGER, applied_at INTEGER)")
        conn.execute("INSERT INTO schema_version VALUES (9999, 0)")
    conn.close()
    check = doctor.database_check(data_dir)
    assert not check.ok and "newer" in check.detail


def test_a_stopped_clock_fails(tmp_path: Path) -> None:
    assert not doctor.clock_check(tmp_path, now=0).ok
    assert doctor.clock_check(tmp_path).ok


def test_an_unreachable_mcp_server_of_a_saved_agent_fails(tmp_path: Path) -> None:
    running = start_server(tmp_path / "data")
    try:
        dead = f"http://127.0.0.1:{free_port()}/mcp"
        tool = {
            "type": "mcp",
            "server_label": "docs",
            "transport": {"type": "http", "server_url": dead},
        }
        status, body, _ = http(
            running.base_url,
            "POST",
            "/v1/agents",
            {"model": "scripted", "tools": [tool]},
            {"Authorization": f"Bearer {API_KEY}", "OpenAI-Beta": "agents=v1"},
        )
        assert status == 200, body
        done = _doctor("--data-dir", str(running.data_dir), "--url", running.base_url)
    finally:
        running.stop()
    assert done.returncode == 1, done.stdout
    assert f"FAIL  mcp {dead}" in done.stdout
    assert "unreachable: connection refused" in done.stdout  # in words, not `[Errno 111]`
    assert "fix: start that MCP server" in done.stdout


def test_a_damaged_database_fails_naming_the_damage(tmp_path: Path) -> None:
    """A database whose pages were overwritten opens, and its schema reads; the check
    still fails, naming what SQLite's quick check found."""
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    path = data_dir / doctor.DATABASE_FILE
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE schema_version (version INTEGER, applied_at INTEGER)")
        conn.execute("INSERT INTO schema_version VALUES (1, 0)")
        conn.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)")
        conn.executemany("INSERT INTO notes (body) VALUES (?)", [("x" * 300,)] * 2000)
        conn.execute("CREATE INDEX notes_body ON notes(body)")
    conn.close()
    assert doctor.database_check(data_dir).ok
    size = path.stat().st_size
    with path.open("r+b") as damaged:
        damaged.seek(size // 2)
        damaged.write(os.urandom(4096))
    check = doctor.database_check(data_dir)
    assert not check.ok, check
    assert "is damaged" in check.detail or "cannot be read" in check.detail, check.detail
    assert check.fix == "restore it from a backup, or move it aside to start afresh"


def test_a_relative_data_directory_is_checked(tmp_path: Path) -> None:
    start_server(tmp_path / "data").stop()
    env = {k: v for k, v in os.environ.items() if not k.startswith("COREBOX_")}
    env["PYTHONPATH"] = str(ROOT)
    done = subprocess.run(
        [sys.executable, "-m", "allinone", "doctor", "--data-dir", "data", "--port", "0"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert "Traceback" not in done.stderr, done.stderr
    database = [line for line in done.stdout.splitlines() if "database" in line]
    assert database and database[0].startswith("ok"), done.stdout
