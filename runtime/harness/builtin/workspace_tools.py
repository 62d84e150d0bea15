"""Workspace tools of the builtin harness: read a file, write a file, list a directory and
run a command, all inside the workspace the Run is bound to (`context.workspace`).

Paths are workspace-relative (a leading `/workspace/` is accepted and removed) and are
resolved by the Runtime's common workspace code, which refuses absolute paths, `..` and
symlinks. Every use is reported as a `tool_call` observation (`before`, then `after`):
kind `command_execution` for commands (Core shows it as a command_execution item),
`file_read`, `file_write` or `directory_list` otherwise. A command first asks for
permission (`permission_request`, tool `shell`) unless the tool policy allows commands;
a denied command is not run and the model is told so. A command runs with `/bin/sh -c`
in the workspace, confined by the Runtime's sandbox (refused when nothing confines it and
unconfined commands are not allowed), in its own process group, killed on timeout or
cancellation.
Results given back to the model are capped; file content and command output are never
logged.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import signal
import time
from pathlib import Path
from typing import Any

from runtime.confinement import ConfinementError, Sandbox, inherited
from runtime.harness.base import RunContext
from runtime.harness.builtin.model import ToolSpec
from runtime.proto import run as wire
from runtime.workspaces import (
    WORKSPACE_PREFIX,
    Binding,
    WorkspaceError,
    list_directory,
    read_bytes,
    replace_file,
)

MAX_READ_BYTES = 256 * 1024
MAX_OUTPUT_CHARS = 64 * 1024
MAX_ENTRIES = 1024
COMMAND_TIMEOUT_SECONDS = 300.0
POLICIES = ("ask", "allow", "deny")

_PATH = {"type": "string", "description": "A path inside the workspace."}
SPECS = [
    ToolSpec(
        "read_file",
        "Read a UTF-8 text file in the workspace.",
        {"type": "object", "properties": {"path": _PATH}, "required": ["path"]},
    ),
    ToolSpec(
        "write_file",
        "Write a UTF-8 text file in the workspace, replacing it if it exists.",
        {
            "type": "object",
            "properties": {"path": _PATH, "content": {"type": "string"}},
            "required": ["path", "content"],
        },
    ),
    ToolSpec(
        "list_directory",
        "List a directory of the workspace ('' or '.' is the workspace itself).",
        {"type": "object", "properties": {"path": _PATH}, "required": ["path"]},
    ),
    ToolSpec(
        "run_command",
        "Run a shell command in the workspace and return its exit code and output.",
        {
            "type": "object",
            "properties": {"command": {"type": "string"}},
            "required": ["command"],
        },
    ),
]
NAMES = frozenset(spec.name for spec in SPECS)


def relative(path: Any) -> str:
    """The path as the model gave it, `/workspace` or `.` meaning the workspace itself;
    the workspace code refuses what leaves it."""
    text = str(path or "").strip()
    if text in (".", WORKSPACE_PREFIX, WORKSPACE_PREFIX.rstrip("/")):
        return ""
    return text


class WorkspaceTools:
    def __init__(self, root: Path, sandbox: Sandbox, command_policy: str = "ask") -> None:
        self._binding = Binding(environment_id="", type="", root=root)
        self._sandbox = sandbox
        self._policy = command_policy if command_policy in POLICIES else "ask"

    async def run(self, name: str, arguments: dict[str, Any], context: RunContext) -> str:
        if name == "run_command":
            return await self._command(str(arguments.get("command") or ""), context)
        call_id = f"ws_{secrets.token_hex(8)}"
        kind = {"read_file": "file_read", "write_file": "file_write"}.get(name, "directory_list")
        path = relative(arguments.get("path"))
        shown = {"path": path}
        await self._observe(context, call_id, name, "before", kind, "in_progress", shown)
        try:
            if name == "read_file":
                result = await asyncio.to_thread(self._read, path)
            elif name == "write_file":
                result = await asyncio.to_thread(self._write, path, arguments.get("content"))
            else:
                result = await asyncio.to_thread(self._list, path)
        except (WorkspaceError, OSError, UnicodeDecodeError, ValueError) as exc:
            reason = exc.code if isinstance(exc, WorkspaceError) else type(exc).__name__
            await self._observe(context, call_id, name, "after", kind, "failed", shown, reason)
            return f"error: {name} failed ({reason})"
        await self._observe(context, call_id, name, "after", kind, "completed", shown)
        return result

    def _read(self, path: str) -> str:
        data, truncated = read_bytes(self._binding, path, MAX_READ_BYTES)
        text = data.decode("utf-8")
        return text + ("\n[truncated]" if truncated else "")

    def _write(self, path: str, content: Any) -> str:
        if not path or not isinstance(content, str):
            raise ValueError("write_file needs a path and text content")
        replace_file(self._binding, path, content.encode("utf-8"))
        return f"wrote {len(content.encode())} bytes to {path}"

    def _list(self, path: str) -> str:
        listing = list_directory(self._binding, path, MAX_ENTRIES)
        lines = [
            f"{entry.name}/" if entry.kind == "directory" else entry.name
            for entry in listing.entries
        ]
        if listing.truncated:
            lines.append("[truncated]")
        return "\n".join(lines) or "(empty)"

    async def _command(self, command: str, context: RunContext) -> str:
        if not command.strip():
            return "error: run_command needs a command"
        if self._policy == "deny":
            return "error: the tool policy does not allow commands"
        if self._policy == "ask":
            request_id = f"perm_{secrets.token_hex(8)}"
            approved = await context.request_permission(
                request_id, "shell", command[:200], f"Run in {self._binding.root}"
            )
            if not approved:
                # A denial by a safety overlay carries its structured result.
                return context.denial(request_id) or "The user denied running this command."
        call_id = f"cmd_{secrets.token_hex(8)}"
        cwd = str(self._binding.root)
        before = wire.ToolObservation(
            kind="command_execution", status="in_progress", command=command, cwd=cwd
        )
        await context.emit(
            "tool_call", wire.ToolCall(id=call_id, name="shell", stage="before", observation=before)
        )
        started = time.monotonic()
        code, output = await self._confined(command)
        after = wire.ToolObservation(
            kind="command_execution",
            status="completed" if code == 0 else "failed",
            command=command,
            cwd=cwd,
            exit_code=code,
            output=output,
            duration_ms=int((time.monotonic() - started) * 1000),
        )
        await context.emit(
            "tool_call", wire.ToolCall(id=call_id, name="shell", stage="after", observation=after)
        )
        return f"exit code {code}\n{output}"

    async def _confined(self, command: str) -> tuple[int, str]:
        """Run `command` through the sandbox; exit code 126 when it refuses to run it."""
        argv = ["/bin/sh", "-c", command]
        try:
            with self._sandbox.command(argv, self._binding.root, inherited(os.environ)) as (
                confined,
                env,
            ):
                return await self._execute(confined, env)
        except ConfinementError as exc:
            return 126, f"[refused: {exc}]"

    async def _execute(self, argv: list[str], env: dict[str, str]) -> tuple[int, str]:
        process = await asyncio.create_subprocess_exec(
            *argv,
            cwd=self._binding.root,
            env=env,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            out, _ = await asyncio.wait_for(process.communicate(), COMMAND_TIMEOUT_SECONDS)
        except TimeoutError:
            _kill(process)
            await process.wait()
            return -1, f"[timed out after {COMMAND_TIMEOUT_SECONDS:.0f}s]"
        except asyncio.CancelledError:
            _kill(process)
            with contextlib.suppress(Exception):
                await asyncio.shield(process.wait())
            raise
        text = out.decode("utf-8", "replace")
        if len(text) > MAX_OUTPUT_CHARS:
            text = text[:MAX_OUTPUT_CHARS] + "\n[truncated]"
        return process.returncode if process.returncode is not None else -1, text

    async def _observe(
        self,
        context: RunContext,
        call_id: str,
        name: str,
        stage: str,
        kind: str,
        status: str,
        arguments: dict[str, Any],
        error: str | None = None,
    ) -> None:
        observation = wire.ToolObservation(
            kind=kind, status=status, name=name, arguments=arguments, error=error
        )
        await context.emit(
            "tool_call",
            wire.ToolCall(
                id=call_id,
                name=name,
                stage="before" if stage == "before" else "after",
                observation=observation,
            ),
        )


def _kill(process: asyncio.subprocess.Process) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
