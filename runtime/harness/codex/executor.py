"""One session's Codex Executor: an app-server process, the session's native thread,
and native resume.

The process starts with the first turn, with its own CODEX_HOME and TMPDIR under the
adapter's home, the model provider given as `-c` overrides (`wire_api = "responses"`),
and the provider's API key only in the child's environment (never on its command line,
never logged). The thread runs in the bound workspace (sandbox `workspace-write`) or,
without an environment, in an empty scratch directory (sandbox `read-only`).

Native resume: the thread id is written under the adapter's home, keyed by the session
(`agent_session_id`), when the thread starts. A later Executor for the same session, in
this process or after a Runtime restart, resumes that thread (`thread/resume`) so the
model sees the conversation so far. With `require_existing_native_session`, a missing
or unresumable thread is a failure instead of a fresh start.

Cancellation: the CLI's `turn/interrupt` leaves the commands it keeps running in the
background alive, so a cancelled turn also stops the app-server and ends every process
it started (runtime.harness.processes); the cancellation is settled only then, and
raises OutcomeUnknown when that cannot be confirmed. The next turn starts a new
app-server that resumes the thread, as after a Runtime restart.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import os
from pathlib import Path
from typing import Any

from runtime.harness.base import NativeFailure, OutcomeUnknown, RunContext, Unavailable
from runtime.harness.codex.cli import Cli
from runtime.harness.codex.rpc import AppServer, RpcError
from runtime.harness.codex.turn import CodexTurn
from runtime.proto.execution import ExecutionConfiguration, ModelProvider
from runtime.proto.inputs import MessageInput

log = logging.getLogger(__name__)

API_KEY_VARIABLE = "COREBOX_CODEX_API_KEY"
PROVIDER_ID = "corebox"
# tool_policy.run_command -> the CLI's approval policy.
APPROVAL_POLICIES = {"ask": "untrusted", "allow": "never", "deny": "untrusted"}
# Subagents, goals, image generation and web search stay off: corebox declares none of them.
DISABLED_FEATURES = ("multi_agent", "goals", "image_generation")
MODEL_RETRIES = 2  # the CLI's own retries of a failed or dropped model request
EFFORTS = frozenset({"none", "minimal", "low", "medium", "high", "xhigh"})


class ThreadStore:
    """session key -> native thread id, one small file each under `root`."""

    def __init__(self, root: Path) -> None:
        self._root = root

    def _path(self, session_key: str) -> Path:
        return self._root / hashlib.sha256(session_key.encode()).hexdigest()

    def get(self, session_key: str) -> str | None:
        try:
            return self._path(session_key).read_text().strip() or None
        except FileNotFoundError:
            return None

    def put(self, session_key: str, thread_id: str) -> None:
        self._root.mkdir(parents=True, exist_ok=True)
        path = self._path(session_key)
        scratch = path.with_suffix(".tmp")
        scratch.write_text(thread_id)
        os.replace(scratch, path)


class CodexExecutor:
    def __init__(
        self,
        executor_id: str,
        configuration: ExecutionConfiguration,
        provider: ModelProvider,
        cli: Cli,
        home: Path,
    ) -> None:
        self.executor_id = executor_id
        self._configuration = configuration
        self._provider = provider
        self._cli = cli
        self._home = home
        self._threads = ThreadStore(home / "threads")
        self._server: AppServer | None = None
        self._thread_id = ""
        options = configuration.agent_options
        policy = ((options.harness_config or {}).get("tool_policy") or {}).get("run_command")
        self._policy = policy if policy in APPROVAL_POLICIES else "ask"

    async def run(self, run_id: str, messages: MessageInput, context: RunContext) -> None:
        if self._server is None or not self._server.running:
            await self._open(context.workspace)
        assert self._server is not None
        turn = CodexTurn(
            self._server,
            self._thread_id,
            run_id,
            context,
            self._configuration.agent_options.model,
            self._policy,
        )
        try:
            await turn.play(messages, self._turn_options())
        except (asyncio.CancelledError, Unavailable):
            # The CLI leaves the commands of an interrupted turn running; the cancel is
            # settled only once none is left. The next turn resumes the thread.
            if not await self._stop():
                raise OutcomeUnknown(
                    "the processes of the stopped Codex turn are not confirmed gone"
                ) from None
            raise

    async def close(self) -> None:
        await self._stop()

    async def _stop(self) -> bool:
        """Stop the app-server and every process it started; whether all are gone."""
        server, self._server = self._server, None
        return await server.close() if server is not None else True

    def _turn_options(self) -> dict[str, Any]:
        effort = self._configuration.execution_controls.reasoning_effort
        return {"effort": effort} if effort in EFFORTS else {}

    async def _open(self, workspace: Path | None) -> None:
        if self._server is not None:
            await self._server.close()
        # Without an environment, a scratch directory of the session's own (the same
        # after a restart, so a resumed thread keeps its working directory).
        key = self._configuration.agent_session_id or self.executor_id
        cwd = workspace or self._home / "scratch" / hashlib.sha256(key.encode()).hexdigest()[:32]
        for directory in (self._home / "home", self._home / "tmp", cwd):
            directory.mkdir(parents=True, exist_ok=True)
        server = AppServer(self._argv(), self._environment(), cwd)
        self._server = server
        await server.start()
        await server.request(
            "initialize", {"clientInfo": {"name": "corebox", "title": None, "version": "1"}}
        )
        await server.notify("initialized")
        self._thread_id = await self._thread(server, cwd, workspace is not None)

    async def _thread(self, server: AppServer, cwd: Path, writable: bool) -> str:
        """Resume the session's thread when one is known, else start one."""
        cfg = self._configuration
        key = cfg.agent_session_id
        settings: dict[str, Any] = {
            "cwd": str(cwd),
            "approvalPolicy": APPROVAL_POLICIES[self._policy],
            # Denied commands: the CLI still runs the ones it deems safe, so nothing may write.
            "sandbox": "workspace-write" if writable and self._policy != "deny" else "read-only",
        }
        if cfg.agent_options.system_prompt:
            settings["developerInstructions"] = cfg.agent_options.system_prompt
        known = self._thread_id or (self._threads.get(key) if key else None)
        if known is not None:
            try:
                resumed = await server.request("thread/resume", {"threadId": known, **settings})
                log.info("codex executor %s resumed its session's thread", self.executor_id)
                return str(resumed["thread"]["id"])
            except RpcError:
                if cfg.require_existing_native_session:
                    raise
                log.warning("codex executor %s could not resume; starting a new thread", key)
        elif cfg.require_existing_native_session:
            raise NativeFailure("no native Codex thread is known for this session")
        started = await server.request("thread/start", settings)
        thread_id = str(started["thread"]["id"])
        if key:
            self._threads.put(key, thread_id)
        return thread_id

    def _argv(self) -> list[str]:
        base_url = self._provider.base_url.rstrip("/")
        provider = (
            f'{{name="{PROVIDER_ID}", base_url="{_toml(base_url)}", '
            f'wire_api="responses", env_key="{API_KEY_VARIABLE}", '
            f"request_max_retries={MODEL_RETRIES}, stream_max_retries={MODEL_RETRIES}}}"
        )
        overrides = [
            f'model_provider="{PROVIDER_ID}"',
            f"model_providers.{PROVIDER_ID}={provider}",
            f'model="{_toml(self._configuration.agent_options.model)}"',
            'web_search="disabled"',
        ]
        argv = [self._cli.path, "app-server"]
        for override in overrides:
            argv += ["-c", override]
        for feature in DISABLED_FEATURES:
            argv += ["--disable", feature]
        return argv

    def _environment(self) -> dict[str, str]:
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self._home / "home"),
            "CODEX_HOME": str(self._home / "home"),
            "TMPDIR": str(self._home / "tmp"),
            API_KEY_VARIABLE: self._provider.api_key,
        }
        for name in ("LANG", "LC_ALL", "SSL_CERT_FILE"):
            if name in os.environ:
                env[name] = os.environ[name]
        return env


def _toml(value: str) -> str:
    """A value for a TOML basic string: backslashes and quotes escaped, no controls."""
    if any(ord(ch) < 0x20 for ch in value):
        raise Unavailable("a Codex setting holds a control character")
    return value.replace("\\", "\\\\").replace('"', '\\"')
