"""Running handler and notifier adapters: fixed commands, `shell=False`, one JSON object
on stdin, exactly one JSON object on stdout, within the configured time (at most 180 s)
and at most 32 KB of output.

The adapter's stderr is discarded, never copied; its environment is inherited from the
host (so deploy the receiver without secrets it does not need). A timeout kills the
adapter's whole process group. The outcome carries only a safe status code.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import threading
from dataclasses import dataclass
from typing import Any

from allinone.receiver.config import MAX_ADAPTER_MS, CommandConfig

MAX_OUTPUT_BYTES = 32 * 1024


@dataclass(frozen=True)
class Outcome:
    """`code` is OK, TIMEOUT, CRASHED, START_FAILED, OUTPUT_TOO_LARGE or MALFORMED_OUTPUT."""

    code: str
    value: dict[str, Any] | None = None

    @property
    def ok(self) -> bool:
        return self.code == "OK"


def run_adapter(command: CommandConfig, payload: dict[str, Any]) -> Outcome:
    timeout = min(command.timeout_ms, MAX_ADAPTER_MS) / 1000
    data = json.dumps(payload).encode()
    try:
        process = subprocess.Popen(
            [command.command, *command.args],
            cwd=command.cwd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            shell=False,
            start_new_session=True,
        )
    except OSError:
        return Outcome("START_FAILED")
    output = bytearray()
    too_large = threading.Event()
    assert process.stdin is not None and process.stdout is not None
    stdin, stdout = process.stdin, process.stdout

    def feed() -> None:
        with contextlib.suppress(OSError):
            stdin.write(data)
        with contextlib.suppress(OSError):
            stdin.close()

    def drain() -> None:
        while True:
            chunk = stdout.read1(65536)  # type: ignore[attr-defined]
            if not chunk:
                return
            output.extend(chunk)
            if len(output) > MAX_OUTPUT_BYTES:
                too_large.set()
                _kill(process)
                return

    threads = [
        threading.Thread(target=feed, name="adapter-stdin", daemon=True),
        threading.Thread(target=drain, name="adapter-stdout", daemon=True),
    ]
    for thread in threads:
        thread.start()
    timed_out = False
    try:
        process.wait(timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        _kill(process)
        process.wait()
    for thread in threads:
        thread.join(5)
    stdout.close()
    if timed_out:
        return Outcome("TIMEOUT")
    if too_large.is_set():
        return Outcome("OUTPUT_TOO_LARGE")
    if process.returncode != 0:
        return Outcome("CRASHED")
    return _parse(bytes(output))


def _kill(process: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(OSError):
        os.killpg(process.pid, signal.SIGKILL)


def _parse(raw: bytes) -> Outcome:
    try:
        value = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return Outcome("MALFORMED_OUTPUT")
    if not isinstance(value, dict):
        return Outcome("MALFORMED_OUTPUT")
    return Outcome("OK", value)
