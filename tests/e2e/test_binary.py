"""Tier 5: the frozen executable, started as a user starts it.

`make smoke` builds `dist/corebox` and runs these tests with COREBOX_BINARY set to its
absolute path. Without COREBOX_BINARY they skip. Each test starts its own process on a
free loopback port with a fresh data directory and a clean environment, and waits for
`GET /readyz` to answer 200 before it talks to the server.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import openai
import pytest
from openai import OpenAI

from tests.allinone.test_first_start import check_first_start, start_in_terminal
from tests.support.chromium import chromium, install
from tests.support.sdk import sdk_client

pytestmark = pytest.mark.binary

API_KEY = "sk-corebox-e2e"
READY_DEADLINE_SECONDS = 60.0
EXIT_DEADLINE_SECONDS = 10.0
POLL_SECONDS = 0.05
UNKNOWN_SESSION = "sess_00000000000000000000000000000000"


@dataclass
class Server:
    process: subprocess.Popen[bytes]
    port: int
    log: Path

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def client(self, api_key: str = API_KEY) -> OpenAI:
        return sdk_client(
            base_url=self.base_url,
            api_key=api_key,
            max_retries=0,
            _strict_response_validation=True,
        )

    def output(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")


def binary() -> Path:
    value = os.environ.get("COREBOX_BINARY")
    if not value:
        pytest.skip("COREBOX_BINARY is not set; run `make smoke` to build and test dist/corebox")
    path = Path(value)
    if not path.is_absolute() or not path.is_file() or not os.access(path, os.X_OK):
        pytest.fail(f"COREBOX_BINARY={value} is not an absolute path to an executable file")
    return path


def clean_env() -> dict[str, str]:
    """The caller's environment without anything that could steer Python or corebox."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("PYTHON", "COREBOX_")) and key != "VIRTUAL_ENV"
    }
    env["COREBOX_API_KEY"] = API_KEY
    return env


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def request(
    port: int,
    method: str,
    path: str,
    body: bytes | None = None,
    headers: dict[str, str] | None = None,
) -> tuple[int, bytes]:
    """One raw HTTP request to the server, closed before returning."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def readyz(port: int) -> int | None:
    try:
        status, _ = request(port, "GET", "/readyz")
    except OSError:
        return None
    return status


def wait_ready(server: Server) -> None:
    deadline = time.monotonic() + READY_DEADLINE_SECONDS
    while readyz(server.port) != 200:
        if time.monotonic() > deadline:
            pytest.fail(
                f"/readyz did not answer 200 within {READY_DEADLINE_SECONDS:.0f} s\n"
                + server.output()
            )
        # Waiting on the process is the poll interval, and notices an early exit at once.
        with contextlib.suppress(subprocess.TimeoutExpired):
            code = server.process.wait(timeout=POLL_SECONDS)
            pytest.fail(f"corebox exited with {code} before it was ready\n" + server.output())


def stop(process: subprocess.Popen[bytes]) -> int:
    """SIGTERM, then SIGKILL to the whole process group if it does not exit in time."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            return process.wait(timeout=EXIT_DEADLINE_SECONDS)
        except subprocess.TimeoutExpired:
            # The one-file bootloader's child is the real server; the group holds both.
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            return process.wait(timeout=EXIT_DEADLINE_SECONDS)
    return process.returncode


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    executable = binary()
    port = free_port()
    log = tmp_path / "corebox.log"
    with log.open("wb") as sink:
        process = subprocess.Popen(
            [str(executable), "serve", "--port", str(port), "--data-dir", str(tmp_path / "data")],
            cwd=tmp_path,
            env=clean_env(),
            stdin=subprocess.DEVNULL,
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    running = Server(process, port, log)
    try:
        wait_ready(running)
        yield running
    finally:
        stop(process)


def run_first_turn(server: Server) -> str:
    """Create a session with input `hello` and check the stream and items; return its id."""
    with server.client() as client:
        stream = client.beta.agents.sessions.create(
            agent={"model": "scripted"}, environment={"type": "none"}, input="hello", stream=True
        )
        events = list(stream)
        types = [event.type for event in events]
        assert "agent.session.created" in types
        assert "agent.session.turn.completed" in types
        assert types[-1] == "agent.session.idle"
        created = events[types.index("agent.session.created")]
        assert created.type == "agent.session.created"
        session_id = created.session.id

        items = client.beta.agents.sessions.items.list(session_id, order="asc")
        messages = [
            (item.role, "".join(part.text for part in item.content if hasattr(part, "text")))
            for item in items
            if item.type == "message"
        ]
        assert messages == [("user", "hello"), ("assistant", "hello")]
        return session_id


def test_a_turn_and_a_sealed_secret_run_through_the_official_sdk(server: Server) -> None:
    """The cipher's native library is not unpacked at start (build/corebox.spec defers
    it): sealing a credential's secret unpacks and loads it."""
    session_id = run_first_turn(server)
    with server.client() as client:
        with client.beta.agents.sessions.stream(session_id, input="again") as stream:
            result = stream.get_final_result()
        assert result.output_text == "again"
        vault = client.beta.agents.vaults.create(name="v")
        auth = {"type": "static_bearer", "token": "SECRET", "mcp_server_url": "https://mcp.test/a"}
        credential = client.beta.agents.vaults.credentials.create(vault.id, name="c", auth=auth)
        assert credential.vault_id == vault.id
    assert "cryptography" in server_maps(server)


def server_maps(server: Server) -> str:
    """The memory map of the one-file bootloader's child, the server itself."""
    children = Path(f"/proc/{server.process.pid}/task/{server.process.pid}/children")
    pids = children.read_text().split()
    assert len(pids) == 1, pids
    return Path(f"/proc/{pids[0]}/maps").read_text()


def test_a_postgresql_url_loads_the_bundled_driver_and_libpq(tmp_path: Path) -> None:
    """PostgreSQL's driver and its libpq are not unpacked at start (build/corebox.spec
    defers them): a PostgreSQL URL unpacks and loads them, so the error is libpq's own
    about the refused connection. PSYCOPG_IMPL=binary keeps psycopg from falling back to
    a libpq of the system."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]  # bound, not listening: connecting is refused
        result = subprocess.run(
            [
                str(binary()),
                "serve",
                "--port",
                str(free_port()),
                "--data-dir",
                str(tmp_path / "data"),
                "--database-url",
                f"postgresql://corebox:pw@127.0.0.1:{port}/corebox",
            ],
            cwd=tmp_path,
            env={**clean_env(), "PSYCOPG_IMPL": "binary"},
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=READY_DEADLINE_SECONDS,
            check=False,
        )
    assert result.returncode == 1, result.stderr
    assert "cannot open database" in result.stderr and "Connection refused" in result.stderr


def test_bad_requests_are_refused_with_api_errors(server: Server) -> None:
    with server.client(api_key="sk-wrong") as client:
        with pytest.raises(openai.AuthenticationError) as denied:
            client.beta.agents.sessions.retrieve(UNKNOWN_SESSION)
        assert denied.value.status_code == 401

    body = json.dumps({"agent": {"model": "scripted"}, "environment": {"type": "none"}}).encode()
    status, payload = request(
        server.port,
        "POST",
        "/v1/agents/sessions",
        body=body,
        headers={"Authorization": f"Bearer {API_KEY}", "Content-Type": "application/json"},
    )
    assert status == 400
    assert json.loads(payload)["error"]["code"] == "invalid_beta"

    status, payload = request(
        server.port,
        "POST",
        "/v1/agents/sessions",
        body=b'{"agent": {"model": ',
        headers={
            "Authorization": f"Bearer {API_KEY}",
            "Content-Type": "application/json",
            "OpenAI-Beta": "agents=v1",
        },
    )
    assert status == 400
    assert json.loads(payload)["error"]["message"]

    with server.client() as client, pytest.raises(openai.NotFoundError):
        client.beta.agents.sessions.retrieve(UNKNOWN_SESSION)


def test_sigterm_stops_the_server_with_exit_status_zero(server: Server) -> None:
    run_first_turn(server)
    server.process.send_signal(signal.SIGTERM)
    try:
        code = server.process.wait(timeout=EXIT_DEADLINE_SECONDS)
    except subprocess.TimeoutExpired:
        pytest.fail(f"corebox did not exit within {EXIT_DEADLINE_SECONDS:.0f} s of SIGTERM")
    assert code == 0, server.output()


def children_of(pid: int) -> list[int]:
    """The processes whose parent is `pid` (from /proc)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError):
            fields = stat.read_text().rsplit(")", 1)[1].split()
            if int(fields[1]) == pid:
                found.append(int(stat.parent.name))
    return found


def test_kill_9_of_the_started_process_stops_the_server(server: Server) -> None:
    """The one-file executable is two processes: the one started (which unpacks the
    program) and the server it runs. A kill -9 of the started one, as a supervisor sends
    it, must not leave the server running on with its port and database."""
    served_by = children_of(server.process.pid)
    assert served_by, "the started process runs the server as its child"
    server.process.send_signal(signal.SIGKILL)
    server.process.wait(timeout=EXIT_DEADLINE_SECONDS)
    deadline = time.monotonic() + EXIT_DEADLINE_SECONDS
    while any(Path(f"/proc/{pid}").exists() for pid in served_by):
        assert time.monotonic() < deadline, f"the server {served_by} outlived its launcher"
        time.sleep(POLL_SECONDS)
    assert readyz(server.port) is None


def test_a_busy_port_is_one_clear_error_line(tmp_path: Path) -> None:
    executable = binary()
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as blocker:
        blocker.bind(("127.0.0.1", 0))
        blocker.listen(1)
        port = blocker.getsockname()[1]
        result = subprocess.run(
            [str(executable), "serve", "--port", str(port), "--data-dir", str(tmp_path / "data")],
            cwd=tmp_path,
            env=clean_env(),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=READY_DEADLINE_SECONDS,
            check=False,
        )
    assert result.returncode != 0
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert str(port) in lines[0]


def test_setup_commands_run_confined_by_the_binary_itself(server: Server, tmp_path: Path) -> None:
    key = tmp_path / "data" / "secrets" / "core.key"
    command = (
        f"cat {key} > stolen.txt 2>/dev/null; echo x > {tmp_path}/planted.txt 2>/dev/null;"
        " echo ok > made.txt"
    )
    with server.client() as client:
        environment = client.beta.agents.environments.create(
            environment={"type": "openai_hosted", "setup_commands": [{"command": command}]}  # type: ignore[typeddict-item]
        )
        client.beta.agents.environments.files.list(environment.id)  # initialized by now
        assert client.beta.agents.environments.retrieve(environment.id).status == "ready"
    made = list((tmp_path / "data" / "workspaces").glob("*/made.txt"))
    assert len(made) == 1 and made[0].read_text() == "ok\n"
    assert (made[0].parent / "stolen.txt").read_text() == ""
    assert not (tmp_path / "planted.txt").exists()


def test_a_command_sees_none_of_the_binarys_own_environment(server: Server, tmp_path: Path) -> None:
    """README "Commands": of the server's environment a command inherits only PATH and the
    locale; nothing the one-file loader set for itself (its unpacked libraries first in
    LD_LIBRARY_PATH would replace the system's for every tool a command runs)."""
    with server.client() as client:
        environment = client.beta.agents.environments.create(
            environment={"type": "openai_hosted", "setup_commands": [{"command": "env > env.txt"}]}  # type: ignore[typeddict-item]
        )
        client.beta.agents.environments.files.list(environment.id)  # initialized by now
        assert client.beta.agents.environments.retrieve(environment.id).status == "ready"
    dumped = list((tmp_path / "data" / "workspaces").glob("*/env.txt"))
    assert len(dumped) == 1
    names = {line.split("=", 1)[0] for line in dumped[0].read_text().splitlines() if "=" in line}
    assert not {n for n in names if n.startswith(("_PYI", "_MEI", "LD_"))}, sorted(names)


def test_the_binary_serves_every_console_file(server: Server) -> None:
    static = Path(__file__).resolve().parents[2] / "allinone" / "console" / "static"
    names = sorted(p.relative_to(static).as_posix() for p in static.rglob("*") if p.is_file())
    assert "app.js" in names and "index.html" in names
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    try:
        connection.request("GET", "/")
        page = connection.getresponse()
        assert page.status == 200 and b"corebox console" in page.read()
        for name in names:
            connection.request("GET", f"/console/{name}")
            answer = connection.getresponse()
            assert (answer.status, answer.read()) == (200, (static / name).read_bytes()), name
    finally:
        connection.close()


def test_the_console_signs_in_from_the_binary_with_no_other_origin(
    server: Server, tmp_path: Path
) -> None:
    found = install()
    if found is None:
        pytest.skip("chromium is not installed and cannot be installed here")
    run_first_turn(server)
    origin = f"http://127.0.0.1:{server.port}/"
    with chromium(found, tmp_path) as tab:
        tab.navigate(origin)
        tab.type_into("#key", API_KEY)
        tab.click(".signin-form button[type=submit]")
        tab.wait_for("document.querySelector('.table .link-row')")
        tab.click(".table .link-row")
        tab.wait_for("document.querySelector('.stream-state .live')")
        assert tab.requests and all(url.startswith(origin) for url in tab.requests)
        assert not any(API_KEY in url for url in tab.requests)
        assert API_KEY not in json.dumps(tab.storage())


def test_first_start_in_a_terminal_is_a_short_banner(tmp_path: Path) -> None:
    """The acceptance of the first five minutes: `dist/corebox serve` on an empty data
    directory, in a real pseudo-terminal, prints at most 12 useful lines with the key,
    the API URL and the console URL."""
    env = {k: v for k, v in clean_env().items() if k != "COREBOX_API_KEY"}
    port = free_port()
    data_dir = tmp_path / "data"
    shown = start_in_terminal(data_dir, port, program=(str(binary()),), env=env)
    check_first_start(shown, data_dir, port)
