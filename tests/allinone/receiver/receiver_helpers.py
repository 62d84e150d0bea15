"""Setting up real receivers against a real server: private directories, configuration
files, and driving the receive cycle. `once` and `status` run the cycle in this process
(the same `runner` functions `corebox receiver once|status` call, on the same files);
`receiver` runs `corebox receiver ...` as a separate process, as a user would, for the
tests about the process itself (locks, exit codes, signals, a crash)."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from allinone.receiver import runner
from allinone.receiver.config import load
from tests.allinone.comms.comms_helpers import Inst
from tests.conftest import ROOT, Server

ADAPTERS = Path(__file__).resolve().parent / "adapters"


def env(extra: dict[str, str] | None = None) -> dict[str, str]:
    found = {k: v for k, v in os.environ.items() if not k.startswith("COREBOX_")}
    found["PYTHONPATH"] = str(ROOT)
    found.update(extra or {})
    return found


def private_dir(path: Path) -> Path:
    path.mkdir(mode=0o700, parents=True)
    path.chmod(0o700)
    return path


def write_private(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    path.chmod(0o600)
    return path


@dataclass
class Side:
    inst: Inst
    directory: Path
    config: Path

    @property
    def work(self) -> Path:
        return self.directory / "work"

    def handled(self) -> list[dict[str, Any]]:
        log = self.work / "handled.jsonl"
        if not log.exists():
            return []
        return [json.loads(line) for line in log.read_text().splitlines()]

    def notified(self) -> list[dict[str, Any]]:
        log = self.work / "notified.jsonl"
        if not log.exists():
            return []
        return [json.loads(line) for line in log.read_text().splitlines()]

    def store(self, sql: str) -> list[tuple[Any, ...]]:
        conn = sqlite3.connect(self.directory / "receiver.db")
        try:
            return list(conn.execute(sql))
        finally:
            conn.close()


def script(name: str, *args: str, timeout_ms: int = 30_000, cwd: Path) -> dict[str, Any]:
    return {
        "command": sys.executable,
        "args": [str(ADAPTERS / name), *args],
        "cwd": str(cwd),
        "timeout_ms": timeout_ms,
    }


def make_side(
    server: Server,
    inst: Inst,
    base: Path,
    *,
    handler: dict[str, Any] | None = None,
    handler_args: tuple[str, ...] | None = None,
    notifier: bool = False,
    **settings: Any,
) -> Side:
    directory = private_dir(base)
    work = private_dir(directory / "work")
    token = write_private(directory / "token", inst.token + "\n")
    config: dict[str, Any] = {
        "origin": server.base_url,
        "token_file": str(token),
        "receive_authorized": True,
        "poll_interval_ms": 100,
    }
    if handler_args is not None:
        handler = script("record_handler.py", *handler_args, cwd=work)
    if handler is not None:
        config.update(handler=handler, dispatch_authorized=True, reply_authorized=True)
    if notifier:
        config.update(notifier=script("record_notifier.py", cwd=work), notify_authorized=True)
    config.update(settings)
    path = write_private(directory / "config.json", json.dumps(config))
    assert work.exists()
    return Side(inst, directory, path)


def receiver(
    side: Side, *args: str, extra_env: dict[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "allinone", "receiver", *args, "--config", str(side.config)],
        env=env(extra_env),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        cwd=str(side.directory),
    )


def once(side: Side) -> dict[str, Any]:
    """One receive cycle in this process; its report as `corebox receiver once` prints it."""
    return _as_printed(runner.once(load(side.config)).as_dict())


def status(side: Side) -> dict[str, Any]:
    """The receiver's status in this process, as `corebox receiver status` prints it."""
    return _as_printed(runner.status(load(side.config)))


def _as_printed(value: Any) -> dict[str, Any]:
    return dict(json.loads(json.dumps(value)))


def resolve(side: Side, resolution: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    path = write_private(side.directory / "resolution.json", json.dumps(resolution))
    return receiver(side, "resolve", "--resolution", str(path))


def messages_from_peer(inst: Inst, contact_id: str) -> list[str]:
    items = inst.events().body["items"]
    return [
        e["message"]["text"]
        for e in items
        if e["contact_id"] == contact_id and e["direction"] == "inbound" and e["type"] == "message"
    ]
