"""The `claude_code` Executor: one session's CLI process and its native session id.

The native session id is the configuration's `agent_session_id` (the one an earlier
Executor reported in `done`, which Core sends back), else a new UUID. A process resumes
it (`--resume`) when the CLI keeps a transcript of it, and starts it (`--session-id`)
otherwise. The
process is started with the first turn and kept for the next ones; a turn that is
cancelled or fails stops it, and the next turn starts a new process that resumes the
same native session from the transcript the CLI keeps, so the conversation survives a
cancellation and a Runtime restart alike. Without a workspace the CLI runs with no
built-in tools in a private directory named after the native session (removed when the
Executor closes).
"""

from __future__ import annotations

import logging
import os
import shutil
import stat
import tempfile
import uuid
from pathlib import Path

from runtime.harness.base import RunContext, Unavailable
from runtime.harness.claude_code import cli
from runtime.harness.claude_code.process import ClaudeProcess
from runtime.harness.claude_code.turn import ClaudeTurn
from runtime.proto.execution import ExecutionConfiguration
from runtime.proto.inputs import MessageInput

log = logging.getLogger(__name__)


class ClaudeCodeExecutor:
    def __init__(
        self,
        executor_id: str,
        configuration: ExecutionConfiguration,
        path: str,
        config_dir: Path | None,
    ) -> None:
        self.executor_id = executor_id
        self._configuration = configuration
        self._path = path
        self._config_dir = config_dir
        resumed = configuration.agent_session_id
        self.native_session_id = resumed or str(uuid.uuid4())
        self._process: ClaudeProcess | None = None
        self._cwd: Path | None = None
        self._scratch: Path | None = None

    async def run(self, run_id: str, messages: MessageInput, context: RunContext) -> None:
        process = await self._ready(context.workspace)
        model = self._configuration.agent_options.model
        try:
            await ClaudeTurn(process, context, model).play(messages)
        except BaseException:
            # A turn that did not settle leaves the CLI mid-turn: the next turn resumes
            # the native session in a new process instead.
            await self._stop()
            raise

    async def _ready(self, workspace: Path | None) -> ClaudeProcess:
        cwd = workspace or self._scratch_dir()
        if self._process is not None and self._process.alive and cwd == self._cwd:
            return self._process
        await self._stop()
        options = self._configuration.agent_options
        resume = cli.transcript_exists(self._config_dir, self.native_session_id)
        launch = cli.Launch(
            path=self._path,
            session_id=self.native_session_id,
            resume=resume,
            model=options.model,
            system_prompt=options.system_prompt,
            tools=workspace is not None,
            disallowed=cli.disallowed(self._configuration),
        )
        process = ClaudeProcess(
            cli.argv(launch), cwd, cli.environment(options.model_provider, self._config_dir)
        )
        try:
            await process.start()
        except BaseException:
            await process.stop()
            raise
        log.info("claude_code executor %s started its CLI (resume=%s)", self.executor_id, resume)
        self._process, self._cwd = process, cwd
        return process

    def _scratch_dir(self) -> Path:
        """The working directory of a session without a workspace. The CLI files its
        transcripts by working directory, so the path depends on the native session id
        only: a resumed session finds its transcript again."""
        if self._scratch is None:
            scratch = Path(tempfile.gettempdir()) / f"corebox-claude-{self.native_session_id}"
            scratch.mkdir(mode=0o700, exist_ok=True)
            found = scratch.lstat()
            if not stat.S_ISDIR(found.st_mode) or found.st_uid != os.getuid():
                raise Unavailable("the private directory of a Claude Code session is not ours")
            self._scratch = scratch
        return self._scratch

    async def _stop(self) -> None:
        process, self._process = self._process, None
        if process is not None:
            await process.stop()

    async def close(self) -> None:
        await self._stop()
        if self._scratch is not None:
            shutil.rmtree(self._scratch, ignore_errors=True)
