"""One Claude Code process and its JSON-lines protocol.

Out (stdin): `user` messages and `control_response`s to the CLI's control requests, plus
the `initialize` control request sent once at start. In (stdout): one JSON object per
line (`system`, `stream_event`, `assistant`, `user`, `result`, `control_request`,
`control_response`). The process runs in its own process group and dies with the
Runtime (runtime.harness.processes); `stop` ends it (TERM, then KILL after a grace
period) and is safe to call twice. Standard error is drained
and only its size is logged: it may quote a prompt.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import secrets
import signal
from pathlib import Path
from typing import Any

from runtime.harness import processes
from runtime.harness.base import NativeFailure, Unavailable

log = logging.getLogger(__name__)

LINE_LIMIT = 64 * 1024 * 1024
START_TIMEOUT_SECONDS = 60.0
STOP_GRACE_SECONDS = 5.0


class ClaudeProcess:
    def __init__(self, argv: list[str], cwd: Path, env: dict[str, str]) -> None:
        self._argv = argv
        self._cwd = cwd
        self._env = env
        self._process: asyncio.subprocess.Process | None = None
        self._stderr_task: asyncio.Task[None] | None = None

    @property
    def alive(self) -> bool:
        return self._process is not None and self._process.returncode is None

    async def start(self) -> None:
        """Start the CLI and complete the `initialize` handshake; raises Unavailable."""
        try:
            self._process = await asyncio.create_subprocess_exec(
                *self._argv,
                cwd=self._cwd,
                env=self._env,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                start_new_session=True,
                limit=LINE_LIMIT,
                preexec_fn=processes.die_with_runtime(),
            )
        except OSError as exc:
            raise Unavailable(f"Claude Code could not start ({type(exc).__name__})") from exc
        self._stderr_task = asyncio.create_task(self._drain_stderr())
        request_id = f"init_{secrets.token_hex(6)}"
        await self.write(
            {
                "type": "control_request",
                "request_id": request_id,
                "request": {"subtype": "initialize"},
            }
        )
        try:
            async with asyncio.timeout(START_TIMEOUT_SECONDS):
                while True:
                    message = await self.read()
                    if message is None:
                        raise Unavailable("Claude Code ended before it was ready")
                    response = message.get("response") or {}
                    if message.get("type") == "control_response" and (
                        response.get("request_id") == request_id
                    ):
                        return
        except TimeoutError as exc:
            raise Unavailable("Claude Code did not answer its initialize request") from exc

    async def write(self, message: dict[str, Any]) -> None:
        process = self._process
        if process is None or process.stdin is None or process.returncode is not None:
            raise NativeFailure("the Claude Code process is not running")
        try:
            process.stdin.write(json.dumps(message).encode() + b"\n")
            await process.stdin.drain()
        except (BrokenPipeError, ConnectionResetError) as exc:
            raise NativeFailure("the Claude Code process stopped reading") from exc

    async def send_user(self, text: str, message_id: str) -> None:
        """Write a user message; `message_id` (a UUID) comes back in its replay."""
        await self.write(
            {
                "type": "user",
                "uuid": message_id,
                "message": {"role": "user", "content": text},
                "parent_tool_use_id": None,
                "session_id": "",
            }
        )

    async def respond(self, request_id: str, response: dict[str, Any]) -> None:
        await self.write(
            {
                "type": "control_response",
                "response": {"subtype": "success", "request_id": request_id, "response": response},
            }
        )

    async def refuse(self, request_id: str, reason: str) -> None:
        await self.write(
            {
                "type": "control_response",
                "response": {"subtype": "error", "request_id": request_id, "error": reason},
            }
        )

    async def read(self) -> dict[str, Any] | None:
        """The next message, or None at the end of the output. Lines that are not JSON
        objects are skipped."""
        process = self._process
        if process is None or process.stdout is None:
            return None
        while True:
            line = await process.stdout.readline()
            if not line:
                return None
            try:
                message = json.loads(line)
            except ValueError:
                log.debug("Claude Code wrote a line that is not JSON (%d bytes)", len(line))
                continue
            if isinstance(message, dict):
                return message

    async def stop(self) -> None:
        process = self._process
        if process is None:
            return
        if process.returncode is None:
            if process.stdin is not None:
                process.stdin.close()
            _signal(process, signal.SIGTERM)
            try:
                async with asyncio.timeout(STOP_GRACE_SECONDS):
                    await asyncio.shield(process.wait())
            except TimeoutError:
                _signal(process, signal.SIGKILL)
                await asyncio.shield(process.wait())
        if self._stderr_task is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.shield(self._stderr_task)

    async def _drain_stderr(self) -> None:
        process = self._process
        if process is None or process.stderr is None:
            return
        size = 0
        while chunk := await process.stderr.read(65536):
            size += len(chunk)
        if size:
            log.info("Claude Code wrote %d bytes to standard error", size)


def _signal(process: asyncio.subprocess.Process, number: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, number)
