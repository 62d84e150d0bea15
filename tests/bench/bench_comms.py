"""corebox continuous-communication benchmark: messages per second from opening a
contact to the reply being received, through two receivers. A script, not a test.

    COREBOX_BINARY=/abs/path/dist/corebox python tests/bench/bench_comms.py [--messages 100]

Without COREBOX_BINARY it runs `python -m allinone` from this checkout instead (both the
server and the receivers). One server on a free loopback port; two roles, each with one
instance and a `corebox receiver run` (polling every --poll-ms, 50 ms by default: the
protocol's 30 s is for real deployments, shorter intervals are allowed only against a
loopback platform). Role B's receiver answers with an instant handler (a tiny script
that replies at once); role A's receiver only receives.
Measured: role A opens --messages contacts, one message each, as fast as it can; a
message counts as done when A's receiver has saved B's reply in its local store (read
from that store every 5 ms). Reported: messages per second (messages / time from the
first open to the last reply saved) and the median and 95th percentile latency per
message. Every wait has a deadline.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
API_KEY = "sk-corebox-bench-comms"
READY_DEADLINE_SECONDS = 60.0
RUN_DEADLINE_SECONDS = 300.0
EXIT_DEADLINE_SECONDS = 10.0
POLL_SECONDS = 0.005

INSTANT_HANDLER = """import json, sys
job = json.loads(sys.stdin.read())
print(json.dumps({"schema_version": 1, "action": "reply", "message": "ack " + job["job_id"]}))
"""


class BenchError(Exception):
    """The benchmark could not measure something; the message says what."""


def command() -> tuple[list[str], dict[str, str], str]:
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("PYTHON", "COREBOX_")) and key != "VIRTUAL_ENV"
    }
    binary = os.environ.get("COREBOX_BINARY")
    if binary:
        return [binary], env, binary
    env["PYTHONPATH"] = str(ROOT)
    return [sys.executable, "-m", "allinone"], env, f"{sys.executable} -m allinone"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def call(
    base: str,
    method: str,
    path: str,
    bearer: str,
    body: dict[str, Any] | None = None,
    headers: dict[str, str] | None = None,
) -> dict[str, Any]:
    request = urllib.request.Request(
        base + path, data=None if body is None else json.dumps(body).encode(), method=method
    )
    request.add_header("Authorization", f"Bearer {bearer}")
    request.add_header("Content-Type", "application/json")
    for name, value in (headers or {}).items():
        request.add_header(name, value)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            found: dict[str, Any] = json.loads(response.read())
            return found
    except urllib.error.HTTPError as exc:
        raise BenchError(f"{method} {path}: {exc.code} {exc.read()[:300]!r}") from exc


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


@contextlib.contextmanager
def started(argv: list[str], env: dict[str, str], log: Path) -> Iterator[subprocess.Popen[bytes]]:
    with log.open("wb") as sink:
        process = subprocess.Popen(
            argv,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        yield process
    finally:
        stop(process)


def wait_ready(base: str, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + READY_DEADLINE_SECONDS
    while True:
        with (
            contextlib.suppress(OSError),
            urllib.request.urlopen(base + "/readyz", timeout=5) as response,
        ):
            if response.status == 200:
                return
        if process.poll() is not None:
            raise BenchError(f"server exited early:\n{log.read_text(errors='replace')}")
        if time.monotonic() > deadline:
            raise BenchError("server was not ready in time")
        time.sleep(0.05)


def private(path: Path) -> Path:
    path.mkdir(mode=0o700, parents=True)
    return path


def write_private(path: Path, text: str) -> Path:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
    return path


def setup_side(
    base: str, workdir: Path, name: str, poll_ms: int, handler: bool
) -> tuple[str, str, Path]:
    """Create a role and its instance; write the receiver's private directory and
    configuration. Return (role_id, token, config path)."""
    role = call(base, "POST", "/core/v1/comms/roles", API_KEY, {"name": name})
    instance = call(
        base,
        "POST",
        f"/core/v1/comms/roles/{role['id']}/instances",
        API_KEY,
        {"name": f"{name}-bench"},
    )
    directory = private(workdir / name)
    work = private(directory / "work")
    token = write_private(directory / "token", instance["token"])
    config: dict[str, Any] = {
        "origin": base,
        "token_file": str(token),
        "receive_authorized": True,
        "poll_interval_ms": poll_ms,
    }
    if handler:
        script = write_private(work / "instant_handler.py", INSTANT_HANDLER)
        config.update(
            dispatch_authorized=True,
            reply_authorized=True,
            handler={
                "command": sys.executable,
                "args": [str(script)],
                "cwd": str(work),
                "timeout_ms": 30_000,
            },
        )
    path = write_private(directory / "config.json", json.dumps(config))
    return role["id"], instance["token"], path


def received(store: Path) -> dict[str, float]:
    """Contacts whose inbound reply A's receiver has saved, from its local store."""
    if not store.exists():
        return {}
    conn = sqlite3.connect(f"file:{store}?mode=ro", uri=True, timeout=1)
    try:
        rows = conn.execute(
            "SELECT DISTINCT contact_id FROM events WHERE direction = 'inbound'"
            " AND type = 'message'"
        ).fetchall()
    except sqlite3.OperationalError:
        return {}
    finally:
        conn.close()
    now = time.monotonic()
    return {str(row[0]): now for row in rows}


def measure(argv: list[str], env: dict[str, str], messages: int, poll_ms: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="corebox-bench-comms-") as tmp:
        workdir = Path(tmp)
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        server_env = {**env, "COREBOX_API_KEY": API_KEY}
        serve = [
            *argv,
            "serve",
            "--port",
            str(port),
            "--data-dir",
            str(workdir / "data"),
            "--log-level",
            "warning",
        ]
        with started(serve, server_env, workdir / "server.log") as server:
            wait_ready(base, server, workdir / "server.log")
            _, a_token, a_config = setup_side(base, workdir, "a", poll_ms, handler=False)
            b_role, _, b_config = setup_side(base, workdir, "b", poll_ms, handler=True)
            run_a = [*argv, "receiver", "run", "--config", str(a_config)]
            run_b = [*argv, "receiver", "run", "--config", str(b_config)]
            with (
                started(run_a, env, workdir / "receiver-a.log") as receiver_a,
                started(run_b, env, workdir / "receiver-b.log") as receiver_b,
            ):
                protocol = {"X-A2A-Protocol": "1.4"}
                epoch = call(base, "GET", "/api/v1/me", a_token, headers=protocol)["primary_epoch"]
                opened: dict[str, float] = {}
                first = time.monotonic()
                for n in range(messages):
                    headers = {
                        **protocol,
                        "X-A2A-Primary-Epoch": str(epoch),
                        "Idempotency-Key": f"bench-{n}",
                    }
                    at = time.monotonic()
                    answer = call(
                        base,
                        "POST",
                        "/api/v1/contacts",
                        a_token,
                        {"to_role_id": b_role, "message": f"ping {n}"},
                        headers,
                    )
                    opened[answer["contact_id"]] = at
                done: dict[str, float] = {}
                store = workdir / "a" / "receiver.db"
                deadline = first + RUN_DEADLINE_SECONDS
                while len(done) < messages:
                    for contact, seen in received(store).items():
                        done.setdefault(contact, seen)
                    for process, name in ((receiver_a, "A"), (receiver_b, "B")):
                        if process.poll() is not None:
                            raise BenchError(f"receiver {name} exited with {process.returncode}")
                    if time.monotonic() > deadline:
                        raise BenchError(f"only {len(done)} of {messages} replies arrived")
                    time.sleep(POLL_SECONDS)
                last = max(done.values())
    latencies = sorted(done[c] - opened[c] for c in opened)
    return {
        "messages": messages,
        "seconds": last - first,
        "rate": messages / (last - first),
        "median_ms": statistics.median(latencies) * 1000,
        "p95_ms": latencies[max(0, int(len(latencies) * 0.95) - 1)] * 1000,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=100, help="contacts to open")
    parser.add_argument("--poll-ms", type=int, default=50, help="receiver polling interval")
    args = parser.parse_args()
    argv, env, label = command()
    try:
        result = measure(argv, env, args.messages, args.poll_ms)
    except BenchError as exc:
        print(f"bench_comms: {exc}", file=sys.stderr)
        return 1
    rows = [
        ("server and receivers", label),
        ("receiver polling interval", f"{args.poll_ms} ms"),
        ("messages (open -> reply received)", str(result["messages"])),
        ("throughput", f"{result['rate']:.1f} messages/s  ({result['seconds']:.2f} s total)"),
        (
            "latency per message, median / p95",
            f"{result['median_ms']:.0f} ms / {result['p95_ms']:.0f} ms",
        ),
    ]
    width = max(len(name) for name, _ in rows)
    for name, value in rows:
        print(f"{name.ljust(width)}  {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
