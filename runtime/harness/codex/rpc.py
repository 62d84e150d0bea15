"""The app-server process and its JSON-RPC connection (one JSON object per line on
stdin/stdout; stderr is drained and never logged, since it may echo a prompt).

`request` sends a request and waits for its response; every other message from the
server (notifications, and requests the server makes of its client, such as approvals)
is put on `incoming` in order. When the process ends, every waiting request fails with
Unavailable and `incoming` receives `None`. OS and JSON errors are translated here.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
import os
import signal
from pathlib import Path
from typing import Any

from runtime.harness import processes
from runtime.harness.base import NativeFailure, Unavailable

log = logging.getLogger(__name__)

MAX_LINE_BYTES = 64 * 1024 * 1024
STOP_TIMEOUT_SECONDS = 5.0
Message = dict[str, Any]


class RpcError(NativeFailure):
    """The server answered a request with a JSON-RPC error (`rpc_code`)."""

    def __init__(self, method: str, rpc_code: int) -> None:
        super().__init__(f"codex app-server refused {method} (JSON-RPC error {rpc_code})")
        self.rpc_code = rpc_code


class AppServer:
    def __init__(self, argv: list[str], env: dict[str, str], cwd: Path) -> None:
        self._argv = argv
        self._env = env
        self._cwd = cwd
        self._process: asyncio.subprocess.Process | None = None
        self._ids = itertools.count(1)
        self._waiting: dict[int, tuple[str, asyncio.Future[Any]]] = {}
        self._tasks: list[asyncio.Task[None]] = []
        self.incoming: asyncio.Queue[Message | None] = asyncio.Queue()

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.returncode is None

    async def start(self) -> None:
        """Start the process; raises Unavailable when it cannot be started."""
        try:
            self._process = await asyncio.create_subprocess_exec(
                *self._argv,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env=self._env,
                cwd=self._cwd,
                limit=MAX_LINE_BYTES,
                start_new_session=True,
                preexec_fn=processes.die_with_runtime(),
            )
        except OSError as exc:
            raise Unavailable(f"the Codex CLI could not be started ({type(exc).__name__})") from exc
        loop = asyncio.get_running_loop()
        self._tasks = [loop.create_task(self._read()), loop.create_task(self._drain())]

    async def request(self, method: str, params: dict[str, Any]) -> Any:
        """Send one request and return its `result`; raises RpcError or Unavailable."""
        request_id = next(self._ids)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._waiting[request_id] = (method, future)
        try:
            await self._write({"id": request_id, "method": method, "params": params})
            return await future
        finally:
            self._waiting.pop(request_id, None)

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        message: Message = {"method": method}
        if params is not None:
            message["params"] = params
        await self._write(message)

    async def respond(self, request_id: Any, result: dict[str, Any]) -> None:
        await self._write({"id": request_id, "result": result})

    async def reject(self, request_id: Any, code: int, message: str) -> None:
        await self._write({"id": request_id, "error": {"code": code, "message": message}})

    async def _write(self, message: Message) -> None:
        process = self._process
        if process is None or process.stdin is None or not self.running:
            raise Unavailable("the Codex app-server is not running")
        try:
            process.stdin.write(json.dumps(message).encode() + b"\n")
            await process.stdin.drain()
        except (OSError, RuntimeError) as exc:
            raise Unavailable("the Codex app-server stopped reading") from exc

    async def _read(self) -> None:
        assert self._process is not None and self._process.stdout is not None
        stdout = self._process.stdout
        try:
            while line := await stdout.readline():
                try:
                    message = json.loads(line)
                except ValueError:
                    log.warning("codex app-server wrote a line that is not JSON")
                    continue
                if isinstance(message, dict):
                    self._deliver(message)
        except (OSError, ValueError) as exc:  # ValueError: a line over MAX_LINE_BYTES
            log.warning("codex app-server output failed (%s)", type(exc).__name__)
        finally:
            for method, future in self._waiting.values():
                if not future.done():
                    future.set_exception(Unavailable(f"the Codex app-server ended during {method}"))
            self.incoming.put_nowait(None)

    def _deliver(self, message: Message) -> None:
        if "method" not in message and "id" in message:
            waiting = self._waiting.get(message["id"])
            if waiting is None or waiting[1].done():
                return
            method, future = waiting
            error = message.get("error")
            if isinstance(error, dict):
                code = error.get("code")
                future.set_exception(RpcError(method, code if isinstance(code, int) else 0))
            else:
                future.set_result(message.get("result"))
            return
        self.incoming.put_nowait(message)

    async def _drain(self) -> None:
        assert self._process is not None and self._process.stderr is not None
        with contextlib.suppress(OSError, ValueError):
            while await self._process.stderr.read(65536):
                pass

    async def close(self) -> bool:
        """End every process the server started (commands it keeps running in the
        background included, in whatever process group they are), then stop the server
        itself (TERM to its group, KILL after STOP_TIMEOUT_SECONDS) and wait for its
        readers. Returns whether the processes it started are confirmed gone."""
        process = self._process
        confirmed = True
        if process is not None and process.returncode is None:
            confirmed = await processes.end_descendants(process.pid)
            if process.stdin is not None:
                process.stdin.close()
            _signal(process.pid, signal.SIGTERM)
            try:
                await asyncio.wait_for(process.wait(), STOP_TIMEOUT_SECONDS)
            except TimeoutError:
                _signal(process.pid, signal.SIGKILL)
                await process.wait()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks = []
        return confirmed


def _signal(pid: int, number: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, number)
