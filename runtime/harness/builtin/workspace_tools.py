"""Workspace tools of the builtin harness: read a file, write a file, list a directory and
run a command, all inside the workspace the Run is bound to (`context.workspace`).

Paths are workspace-relative (a leading `/workspace/` is accepted and removed) and are
resolved by the Runtime's common workspace code, which refuses absolute paths, `..` and
symlinks. Every use is reported as a `tool_call` observation (`before`, then `after`):
kind `command_execution` for commands (Core shows it as a command_execution item),
`file_read`, `file_write` or `directory_list` otherwise. A command first asks for
permission (`permission_request`, tool `shell`) unless the tool policy allows commands;
a denied command is not run and the model is told so (one denied by a safety overlay is
reported as a refused call, refusals.py). A command runs through
`runtime.harness.commands` (confined, with the Run's credential variables, which are
blanked out of its output).
Results given back to the model are capped; file content and command output are never
logged.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from runtime.confinement import Sandbox
from runtime.harness.base import RunContext
from runtime.harness.builtin import refusals
from runtime.harness.builtin.model import ToolSpec
from runtime.harness.commands import CommandRunner
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
MAX_ENTRIES = 1024
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
    def __init__(
        self,
        root: Path,
        sandbox: Sandbox,
        command_policy: str = "ask",
        command_environment: dict[str, str] | None = None,
    ) -> None:
        """`command_environment` (secret values) is added to every command's environment."""
        self._binding = Binding(environment_id="", type="", root=root)
        self._sandbox = sandbox
        self._policy = command_policy if command_policy in POLICIES else "ask"
        self._commands = CommandRunner(root, sandbox, command_environment)

    async def run(
        self,
        name: str,
        arguments: dict[str, Any],
        context: RunContext,
        asking: Callable[[str], str] | None = None,
    ) -> str:
        """Run one workspace tool. While a command waits for its approval, the wait is a
        checkpoint with the cursor `asking(request_id)` gives (none when it gives "")."""
        if name == "run_command":
            return await self._command(str(arguments.get("command") or ""), context, asking)
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

    async def _command(
        self, command: str, context: RunContext, asking: Callable[[str], str] | None
    ) -> str:
        if not command.strip():
            return "error: run_command needs a command"
        if self._policy == "deny":
            return "error: the tool policy does not allow commands"
        if self._policy == "ask":
            request_id = f"perm_{secrets.token_hex(8)}"
            approved = await context.request_permission(
                request_id,
                "shell",
                command[:200],
                f"Run in {self._binding.root}",
                checkpoint=asking(request_id) if asking is not None else "",
            )
            if not approved:
                return await _denied(context, request_id, command)
        return await self._execute(command, context)

    async def resume_command(
        self, arguments: dict[str, Any], request_id: str, context: RunContext
    ) -> str:
        """Continue a command whose approval a checkpoint waited for (on a new Run):
        wait for the decision on `request_id`, then run it when approved."""
        if not await context.wait_permission(request_id):
            return await _denied(context, request_id, str(arguments.get("command") or ""))
        return await self._execute(str(arguments.get("command") or ""), context)

    async def _execute(self, command: str, context: RunContext) -> str:
        call_id = f"cmd_{secrets.token_hex(8)}"
        cwd = str(self._binding.root)
        before = wire.ToolObservation(
            kind="command_execution", status="in_progress", command=command, cwd=cwd
        )
        await context.emit(
            "tool_call", wire.ToolCall(id=call_id, name="shell", stage="before", observation=before)
        )
        started = time.monotonic()
        code, output = await self._commands.run(command)
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


async def _denied(context: RunContext, request_id: str, command: str) -> str:
    """The result of a command whose approval was denied. A denial by a safety overlay
    carries its structured result, and the refused call is reported with it."""
    refusal = context.denial(request_id)
    if not refusal:
        return "The user denied running this command."
    await refusals.report(context, "run_command", {"command": command}, refusal)
    return refusal
