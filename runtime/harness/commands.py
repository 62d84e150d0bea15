"""Commands a Run starts in its workspace, shared by the harnesses that run them.

`CommandRunner.run(command)` runs `/bin/sh -c command` in the workspace, confined by the
Runtime's sandbox (exit code 126 and a `[refused: ...]` output when nothing confines it
and unconfined commands are not allowed), in its own process group, killed on timeout
or cancellation. The environment is the Runtime's locale and PATH plus the Run's
`command_environment` (its vault credentials); every one of those secret values is
blanked out of the output, so no secret reaches the model, an item or the journal
through it. Output is capped and never logged.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from pathlib import Path

from runtime.confinement import ConfinementError, Sandbox, inherited

MAX_OUTPUT_CHARS = 64 * 1024
COMMAND_TIMEOUT_SECONDS = 300.0
REDACTED = "[redacted]"


class CommandRunner:
    def __init__(
        self, root: Path, sandbox: Sandbox, environment: dict[str, str] | None = None
    ) -> None:
        self._root = root
        self._sandbox = sandbox
        self._extra = dict(environment or {})

    async def run(self, command: str) -> tuple[int, str]:
        """(exit code, output); -1 when it timed out."""
        argv = ["/bin/sh", "-c", command]
        try:
            base = {**inherited(os.environ), **self._extra}
            with self._sandbox.command(argv, self._root, base) as (confined, env):
                code, output = await self._execute(confined, env)
        except ConfinementError as exc:
            return 126, f"[refused: {exc}]"
        return code, self._redacted(output)

    def _redacted(self, output: str) -> str:
        for value in self._extra.values():
            output = output.replace(value, REDACTED)
        return output

    async def _execute(self, argv: list[str], env: dict[str, str]) -> tuple[int, str]:
        process = await asyncio.create_subprocess_exec(
            *argv,
            cwd=self._root,
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


def _kill(process: asyncio.subprocess.Process) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
