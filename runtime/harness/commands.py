"""Commands a Run starts in its workspace, shared by the harnesses that run them.

`CommandRunner.run(command)` runs `/bin/sh -c command` in the workspace, confined by the
Runtime's sandbox (exit code 126 and a `[refused: ...]` output when nothing confines it
and unconfined commands are not allowed), in its own process group, killed on timeout
or cancellation. The environment is the Runtime's locale and PATH plus the Run's
`command_environment` (its vault credentials); every one of those secret values is
blanked out of the output, so no secret reaches the model, an item or the journal
through it. Output is capped and never logged.

What a command prints is read as it arrives, one bounded chunk per turn of the event
loop: the bytes the capped output can show are kept, every later byte is dropped on
arrival, so a command's memory in the Runtime stays the same whatever it prints, and a
flood never keeps a cancellation from running. The output pipe is the Runtime's own, not
the subprocess transport's, so waiting for a killed command never waits on output
nobody reads.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from pathlib import Path

from runtime.confinement import ConfinementError, Sandbox, inherited

MAX_OUTPUT_CHARS = 64 * 1024
# A character is at most four bytes of UTF-8: the first KEPT_BYTES bytes always hold the
# first MAX_OUTPUT_CHARS characters, and more bytes than that are more characters too.
KEPT_BYTES = 4 * MAX_OUTPUT_CHARS
TRUNCATED = "\n[truncated]"
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
        """(exit code, output); -1 when it timed out. The output is the first
        MAX_OUTPUT_CHARS characters of what the command printed (stdout and stderr),
        followed by `TRUNCATED` when it printed more."""
        argv = ["/bin/sh", "-c", command]
        try:
            base = {**inherited(os.environ), **self._extra}
            with self._sandbox.command(argv, self._root, base) as (confined, env):
                code, output = await self._execute(confined, env)
        except ConfinementError as exc:
            return 126, f"[refused: {exc}]"
        if output is None:
            return code, f"[timed out after {COMMAND_TIMEOUT_SECONDS:.0f}s]"
        # Secrets are blanked before the cut, so none is shown in part at its edge.
        text = self._redacted(output.head.decode("utf-8", "replace"))
        if output.dropped or len(text) > MAX_OUTPUT_CHARS:
            text = text[:MAX_OUTPUT_CHARS] + TRUNCATED
        return code, text

    def _redacted(self, output: str) -> str:
        for value in self._extra.values():
            output = output.replace(value, REDACTED)
        return output

    async def _execute(self, argv: list[str], env: dict[str, str]) -> tuple[int, _Output | None]:
        """(exit code, output) once the command exited and its output ended; (-1, None)
        when it timed out. Cancelled, it kills the command's process group first."""
        reading, writing = os.pipe()
        try:
            process = await asyncio.create_subprocess_exec(
                *argv,
                cwd=self._root,
                env=env,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=writing,
                stderr=asyncio.subprocess.STDOUT,
                start_new_session=True,
            )
        except BaseException:
            os.close(reading)
            raise
        finally:
            os.close(writing)
        pipe = os.fdopen(reading, "rb", buffering=0)
        transport: asyncio.BaseTransport | None = None
        try:
            loop = asyncio.get_running_loop()
            transport, output = await loop.connect_read_pipe(_Output, pipe)
            code = await asyncio.wait_for(_ended(process, output), COMMAND_TIMEOUT_SECONDS)
        except TimeoutError:
            await _killed(process)
            return -1, None
        except BaseException:
            await _killed(process)
            raise
        finally:
            if transport is not None:
                transport.close()
            else:
                pipe.close()
        return code, output


class _Output(asyncio.Protocol):
    """What a command prints: its first KEPT_BYTES bytes kept, the rest dropped as it
    arrives (`dropped` says whether any was); `ended` resolves at end of output."""

    def __init__(self) -> None:
        self.head = bytearray()
        self.dropped = False
        self.ended: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def data_received(self, data: bytes) -> None:
        room = KEPT_BYTES - len(self.head)
        if room > 0:
            self.head += data[:room]
        if len(data) > room:
            self.dropped = True

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.ended.done():
            self.ended.set_result(None)


async def _ended(process: asyncio.subprocess.Process, output: _Output) -> int:
    await output.ended
    return await process.wait()


async def _killed(process: asyncio.subprocess.Process) -> None:
    """Kill the command's process group and reap it. The pipe is not the transport's, so
    the wait ends when the process does; a second cancellation still interrupts it."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    await asyncio.shield(process.wait())
