"""corebox benchmark: start-up time, idle memory and turn latency. A script, not a test.

    COREBOX_BINARY=/abs/path/dist/corebox python tests/bench/bench.py [--starts 3] [--turns 200]

Without COREBOX_BINARY it runs `python -m allinone serve` from this checkout instead.
Every server gets a free loopback port, a fresh data directory and a clean environment.
Measured:
- cold start: process start to the first `GET /readyz` 200, median over fresh data dirs
  (and again on each of them, stopped: a restart, with the database already made); for
  the binary, beside a bare one-file hello built with the same options (its floor);
- idle RSS: VmRSS from /proc after readiness. A PyInstaller one-file executable is a
  bootloader whose child process is the real server; both are reported, and the table's
  headline figure is the server process (the child when there is one);
- turn latency: time from sending `POST /v1/agents/sessions/{id}/events` with one
  `agent.session.input.message` to reading that turn's `agent.session.turn.completed` on
  an already open `GET /v1/agents/sessions/{id}/events` stream, for a one-line echo by
  the scripted harness; the next input is sent after `agent.session.idle`.
All traffic goes to 127.0.0.1. Every wait has a deadline.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import math
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
API_KEY = "sk-corebox-bench"
HEADERS = {"Authorization": f"Bearer {API_KEY}", "OpenAI-Beta": "agents=v1"}
READY_DEADLINE_SECONDS = 60.0
EXIT_DEADLINE_SECONDS = 10.0
TURN_DEADLINE_SECONDS = 30.0
POLL_SECONDS = 0.005


class BenchError(Exception):
    """The benchmark could not measure something; the message says what."""


@dataclass
class Server:
    process: subprocess.Popen[bytes]
    port: int
    log: Path


def command() -> tuple[list[str], dict[str, str], str]:
    """The argv and environment that start a server, and a label for the table."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("PYTHON", "COREBOX_")) and key != "VIRTUAL_ENV"
    }
    env["COREBOX_API_KEY"] = API_KEY
    binary = os.environ.get("COREBOX_BINARY")
    if binary:
        return [binary], env, binary
    env["PYTHONPATH"] = str(ROOT)
    return [sys.executable, "-m", "allinone"], env, f"{sys.executable} -m allinone"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def readyz(port: int) -> int | None:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        conn.request("GET", "/readyz")
        response = conn.getresponse()
        response.read()
        return response.status
    except OSError:
        return None
    finally:
        conn.close()


@contextlib.contextmanager
def serve(argv: list[str], env: dict[str, str], workdir: Path) -> Iterator[tuple[Server, float]]:
    """Start a server, wait until /readyz is 200, yield it with the seconds that took."""
    port = free_port()
    log = workdir / "corebox.log"
    data_dir = workdir / "data"
    with log.open("wb") as sink:
        started = time.monotonic()
        process = subprocess.Popen(
            [*argv, "serve", "--port", str(port), "--data-dir", str(data_dir)],
            cwd=workdir,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        deadline = started + READY_DEADLINE_SECONDS
        while readyz(port) != 200:
            if time.monotonic() > deadline:
                raise BenchError(f"/readyz not 200 within {READY_DEADLINE_SECONDS:.0f} s")
            with contextlib.suppress(subprocess.TimeoutExpired):
                code = process.wait(timeout=POLL_SECONDS)
                output = log.read_text(encoding="utf-8", errors="replace")
                raise BenchError(f"server exited with {code} before it was ready:\n{output}")
        yield Server(process, port, log), time.monotonic() - started
    finally:
        stop(process)


def stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is not None:
        return
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=EXIT_DEADLINE_SECONDS)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=EXIT_DEADLINE_SECONDS)


def children(pid: int) -> list[int]:
    found: list[int] = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # Fields after the parenthesised command name: state, ppid, ...
        fields = stat[stat.rfind(")") + 2 :].split()
        if int(fields[1]) == pid:
            found.append(int(entry.name))
    return sorted(found)


def rss_kib(pid: int) -> int | None:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    for line in status.splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return None


@dataclass
class Memory:
    launcher_kib: int | None
    server_kib: int | None
    server_is_child: bool

    @property
    def total_kib(self) -> int | None:
        if self.server_kib is None:
            return None
        if self.server_is_child and self.launcher_kib is not None:
            return self.launcher_kib + self.server_kib
        return self.server_kib


def memory(process: subprocess.Popen[bytes]) -> Memory:
    kids = children(process.pid)
    if kids:
        server = sum(filter(None, (rss_kib(pid) for pid in kids)))
        return Memory(rss_kib(process.pid), server, True)
    return Memory(None, rss_kib(process.pid), False)


class EventStream:
    """An SSE response (session creation or the session's events) read event by event."""

    def __init__(self, port: int, method: str, path: str, body: object = None) -> None:
        self._conn = http.client.HTTPConnection("127.0.0.1", port, timeout=TURN_DEADLINE_SECONDS)
        headers = {**HEADERS, "Accept": "text/event-stream"}
        if body is not None:
            headers["Content-Type"] = "application/json"
        self._conn.request(
            method, path, body=None if body is None else json.dumps(body).encode(), headers=headers
        )
        self._response = self._conn.getresponse()
        if self._response.status != 200:
            status, payload = self._response.status, self._response.read()
            self.close()
            raise BenchError(f"{method} {path} answered {status}: {payload[:300]!r}")

    def next(self, deadline: float) -> tuple[str, dict[str, object]]:
        event_type = ""
        while time.monotonic() < deadline:
            raw = self._response.readline()
            if not raw:
                raise BenchError("the events stream closed")
            line = raw.decode().rstrip("\r\n")
            if line.startswith("event:"):
                event_type = line[len("event:") :].strip()
            elif line.startswith("data:") and event_type:
                data: dict[str, object] = json.loads(line[len("data:") :])
                return event_type, data
        raise BenchError("no event before the deadline")

    def close(self) -> None:
        self._response.close()
        self._conn.close()


def new_session(port: int) -> str:
    """A scripted session that ran its first turn to idle; its id."""
    # Sessions without an environment need initial input: run that first turn to idle on
    # the creation stream, which the server closes after it, so the session is idle.
    creation = EventStream(
        port,
        "POST",
        "/v1/agents/sessions",
        {
            "agent": {"model": "scripted"},
            "environment": {"type": "none"},
            "input": "warm up",
            "stream": True,
        },
    )
    try:
        deadline = time.monotonic() + TURN_DEADLINE_SECONDS
        event_type, data = creation.next(deadline)
        if event_type != "agent.session.created":
            raise BenchError(f"creation stream began with {event_type}")
        session = data.get("session")
        if not isinstance(session, dict):
            raise BenchError("agent.session.created carried no session")
        session_id = str(session["id"])
        while event_type != "agent.session.idle":
            event_type, _ = creation.next(deadline)
    finally:
        creation.close()
    return session_id


def turn_latencies(port: int, turns: int, session_id: str | None = None) -> list[float]:
    """Latencies of `turns` one-line echo turns, one after another, on `session_id` (a new
    session when None)."""
    session_id = session_id or new_session(port)
    path = f"/v1/agents/sessions/{session_id}/events"
    stream = EventStream(port, "GET", path)
    poster = http.client.HTTPConnection("127.0.0.1", port, timeout=TURN_DEADLINE_SECONDS)
    latencies: list[float] = []
    try:
        for number in range(turns):
            message = {
                "type": "agent.session.input.message",
                "input": [
                    {"role": "user", "content": [{"type": "input_text", "text": f"ping {number}"}]}
                ],
            }
            body = json.dumps({"events": [message]}).encode()
            sent = time.perf_counter()
            poster.request(
                "POST", path, body=body, headers={**HEADERS, "Content-Type": "application/json"}
            )
            response = poster.getresponse()
            response.read()
            if response.status != 202:
                raise BenchError(f"input {number} answered {response.status}")
            deadline = time.monotonic() + TURN_DEADLINE_SECONDS
            turn_id: object = None
            completed: float | None = None
            while True:
                event_type, data = stream.next(deadline)
                if event_type == "agent.session.turn.created" and turn_id is None:
                    turn_id = data.get("turn_id")
                elif (
                    event_type == "agent.session.turn.completed" and data.get("turn_id") == turn_id
                ):
                    completed = time.perf_counter()
                elif event_type in ("agent.session.turn.failed", "agent.session.failed"):
                    raise BenchError(f"turn {number} failed: {json.dumps(data)[:300]}")
                elif event_type == "agent.session.idle" and completed is not None:
                    break
            latencies.append(completed - sent)
    finally:
        poster.close()
        stream.close()
    return latencies


def percentile(values: list[float], fraction: float) -> float:
    """Nearest-rank percentile."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(fraction * len(ordered)) - 1)]


def mib(kib: int | None) -> str:
    return "n/a" if kib is None else f"{kib / 1024:.1f} MiB"


HELLO = "import sys\nsys.stdout.write('hello\\n')\n"
# The options of build/corebox.spec and build/build.py: stripped, no UPX, what the
# bootloader unpacks stored uncompressed, the PYZ's modules stored.
HELLO_SPEC = """
a = Analysis([{script!r}])
pyz = PYZ(a.pure)
exe = EXE(
    pyz, a.scripts, a.binaries, a.datas, [], name="hello", strip=True, upx=False,
    console=True, cdict={cdict!r},
)
"""
HELLO_CDICT = {
    "BINARY": False, "EXTENSION": False, "DATA": False, "EXECUTABLE": False,
    "PYSOURCE": True, "PYMODULE": True, "SPLASH": True, "PYZ": False, "SYMLINK": False,
}  # fmt: skip


def bare_onefile_hello() -> Path:
    """A one-file executable of a two-line script, built by PyInstaller with the options
    `build/` uses for corebox: the floor a one-file start cannot beat."""
    work = ROOT / "build" / "work" / "hello"
    work.mkdir(parents=True, exist_ok=True)
    script = work / "hello.py"
    script.write_text(HELLO)
    spec = work / "hello.spec"
    spec.write_text(HELLO_SPEC.format(script=str(script), cdict=HELLO_CDICT))
    subprocess.run(
        [
            sys.executable, "-m", "PyInstaller", "--log-level", "ERROR", "--noconfirm",
            "--distpath", str(work / "dist"), "--workpath", str(work / "build"), str(spec),
        ],
        check=True,
        env={**os.environ, "PYINSTALLER_ZLIB_COMPRESSION_LEVEL": "0"},
    )  # fmt: skip
    return work / "dist" / "hello"


def hello_start_seconds(executable: Path, starts: int) -> float:
    """Median seconds from process start to its exit, after one unmeasured run."""
    subprocess.run([str(executable)], check=True, capture_output=True)
    samples = []
    for _ in range(starts):
        started = time.monotonic()
        subprocess.run([str(executable)], check=True, capture_output=True)
        samples.append(time.monotonic() - started)
    return statistics.median(samples)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--starts", type=int, default=3, help="cold starts to time")
    parser.add_argument("--turns", type=int, default=200, help="turns on one session")
    args = parser.parse_args()
    argv, env, label = command()

    starts: list[float] = []
    restarts: list[float] = []
    try:
        for _ in range(args.starts):
            with tempfile.TemporaryDirectory(prefix="corebox-bench-") as workdir:
                with serve(argv, env, Path(workdir)) as (_, seconds):
                    starts.append(seconds)
                with serve(argv, env, Path(workdir)) as (_, seconds):
                    restarts.append(seconds)
        with (
            tempfile.TemporaryDirectory(prefix="corebox-bench-") as workdir,
            serve(argv, env, Path(workdir)) as (server, _),
        ):
            idle = memory(server.process)
            latencies = turn_latencies(server.port, args.turns)
            after = memory(server.process)
    except BenchError as exc:
        print(f"bench: {exc}", file=sys.stderr)
        return 1

    where = "one-file child process" if idle.server_is_child else "single process"
    rows = [
        ("server", label),
        (
            f"cold start to /readyz 200 (median of {len(starts)})",
            f"{statistics.median(starts) * 1000:.0f} ms  "
            f"(runs: {', '.join(f'{s * 1000:.0f}' for s in starts)} ms)",
        ),
        (
            "  start again on the same data dir (median)",
            f"{statistics.median(restarts) * 1000:.0f} ms",
        ),
        (f"idle RSS after readiness ({where})", mib(idle.server_kib)),
    ]
    if os.environ.get("COREBOX_BINARY"):
        hello = hello_start_seconds(bare_onefile_hello(), args.starts)
        rows.append(
            (
                "  bare one-file hello start (same build options)",
                f"{hello * 1000:.0f} ms; corebox ratio {statistics.median(starts) / hello:.2f}",
            )
        )
    if idle.server_is_child:
        rows.append(
            ("  bootloader RSS / total", f"{mib(idle.launcher_kib)} / {mib(idle.total_kib)}")
        )
    rows += [
        (f"RSS after {len(latencies)} turns ({where})", mib(after.server_kib)),
        (
            f"turn latency p50 ({len(latencies)} turns)",
            f"{percentile(latencies, 0.50) * 1000:.1f} ms",
        ),
        (
            f"turn latency p99 ({len(latencies)} turns)",
            f"{percentile(latencies, 0.99) * 1000:.1f} ms",
        ),
        ("turn latency max", f"{max(latencies) * 1000:.1f} ms"),
    ]
    width = max(len(name) for name, _ in rows)
    print(f"{'metric'.ljust(width)}  value")
    print(f"{'-' * width}  {'-' * 40}")
    for name, value in rows:
        print(f"{name.ljust(width)}  {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
