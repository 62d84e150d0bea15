"""The first start of `corebox serve` as a person and as a program see it: a short
banner in a terminal (a real pseudo-terminal), stable machine lines through a pipe, and
no library chatter either way."""

from __future__ import annotations

import json
import os
import pty
import select
import signal
import subprocess
import sys
from pathlib import Path

from tests.conftest import API_KEY, ROOT, free_port, start_server, wait_ready
from tests.support.sdk import sdk_client

CHATTER = ("apscheduler", "uvicorn", "Adding job", "WebSocket /api", "connection open")


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("COREBOX_")}
    env["PYTHONPATH"] = str(ROOT)
    return env


def _read_all(fd: int, deadline: float = 30.0) -> bytes:
    """Everything written to the terminal until its last writer closes it."""
    out = b""
    while True:
        readable, _, _ = select.select([fd], [], [], deadline)
        if not readable:
            raise TimeoutError(out.decode(errors="replace"))
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # EIO: the other side of the terminal is gone
            return out
        if not chunk:
            return out
        out += chunk


def start_in_terminal(
    data_dir: Path,
    port: int,
    *extra: str,
    program: tuple[str, ...] = (sys.executable, "-m", "allinone"),
    env: dict[str, str] | None = None,
) -> str:
    """Start `program serve` with its output on a pseudo-terminal, stop it once ready, and
    return what the terminal showed before shutdown began."""
    main, terminal = pty.openpty()
    ready, ready_w = os.pipe()
    args = ["serve", "--port", str(port), "--data-dir", str(data_dir), "--ready-fd"]
    process = subprocess.Popen(
        [*program, *args, str(ready_w), *extra],
        stdin=terminal,
        stdout=terminal,
        stderr=terminal,
        env=_env() if env is None else env,
        pass_fds=(ready_w,),
    )
    os.close(terminal)
    os.close(ready_w)
    try:
        wait_ready(ready, process)
        process.send_signal(signal.SIGINT)
        shown = _read_all(main).decode(errors="replace")
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(30)
        os.close(main)
    return shown.split("corebox shutting down")[0].replace("\r\n", "\n")


def test_first_start_in_a_terminal_prints_a_short_useful_banner(tmp_path: Path) -> None:
    port = free_port()
    data_dir = tmp_path / "data"
    check_first_start(start_in_terminal(data_dir, port), data_dir, port)


def check_first_start(shown: str, data_dir: Path, port: int) -> None:
    """At most 12 lines, with the key, the API and console URLs and no chatter."""
    lines = [line for line in shown.splitlines() if line.strip()]
    # the last line is the shutdown's own log line, cut in half by the split above
    assert len(lines) - 1 <= 12, shown
    key = (data_dir / "default-project.key").read_text().strip()
    assert key in shown
    assert f"http://127.0.0.1:{port}/v1" in shown
    assert f"http://127.0.0.1:{port}/\n" in shown  # the console
    assert str(data_dir) in shown
    assert "scripted" in shown
    assert not [line for line in lines if any(word in line for word in CHATTER)], shown


def test_a_later_start_does_not_show_the_key_again(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    start_in_terminal(data_dir, free_port())
    shown = start_in_terminal(data_dir, free_port())
    key = (data_dir / "default-project.key").read_text().strip()
    assert key not in shown
    assert str(data_dir / "default-project.key") in shown


def test_debug_brings_the_library_lines_back(tmp_path: Path) -> None:
    shown = start_in_terminal(tmp_path / "data", free_port(), "--log-level", "debug")
    assert "apscheduler" in shown


def _start_piped(data_dir: Path, *extra: str) -> tuple[str, str]:
    ready, ready_w = os.pipe()
    args = ["serve", "--port", str(free_port()), "--data-dir", str(data_dir), "--ready-fd"]
    process = subprocess.Popen(
        [sys.executable, "-m", "allinone", *args, str(ready_w), *extra],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=_env(),
        pass_fds=(ready_w,),
    )
    os.close(ready_w)
    try:
        wait_ready(ready, process)
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    return out.decode(), err.decode()


def test_piped_output_stays_machine_friendly(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    out, err = _start_piped(data_dir)
    key = (data_dir / "default-project.key").read_text().strip()
    lines = out.splitlines()
    assert all(line.startswith("corebox: ") for line in lines), out
    assert f"corebox: created the default project; its API key is {key}" in lines
    assert any(line.startswith("corebox: serving on port ") for line in lines)
    assert "is serving" not in err and key not in err  # no banner, no key in the log
    for line in err.splitlines():
        assert line.startswith("time="), line
        assert " level=" in line and " logger=" in line and " msg=" in line
    assert not [line for line in err.splitlines() if any(word in line for word in CHATTER)]


def test_json_logs_are_one_object_per_line(tmp_path: Path) -> None:
    _, err = _start_piped(tmp_path / "data", "--log-format", "json")
    records = [json.loads(line) for line in err.splitlines()]
    assert records
    assert {"time", "level", "logger", "msg"} <= set(records[0])
    assert any("serving on" in record["msg"] for record in records)


def test_every_line_about_a_turn_names_its_session_and_turn(tmp_path: Path) -> None:
    running = start_server(tmp_path / "data", log_level="debug")
    try:
        client = sdk_client(base_url=f"{running.base_url}/v1", api_key=API_KEY, max_retries=0)
        events = list(
            client.beta.agents.sessions.create(
                agent={"model": "scripted"}, environment={"type": "none"}, input="hi", stream=True
            )
        )
        session_id = events[0].session.id  # type: ignore[union-attr]
        completed = next(e for e in events if e.type == "agent.session.turn.completed")
        turn_id = completed.turn.id
    finally:
        running.stop()
    naming = [line for line in running.log.read_text().splitlines() if turn_id in line]
    assert any("claimed" in line for line in naming), naming
    for line in naming:
        if line.startswith("time="):
            assert f"session_id={session_id}" in line and f"turn_id={turn_id}" in line, line
