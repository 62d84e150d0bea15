"""`codex`: an installed Codex CLI as a harness, driven through `codex app-server`.

The adapter is registered with the CLI the Runtime found at start-up (cli.probe), or
with none: then it declares itself unavailable and its version is empty, so Core lists
no `codex` harness and refuses `codex` sessions naming what to install. `version` is the
CLI's own version. Sessions need a model provider speaking `responses` (the only wire
API the CLI has); its base URL may be any OpenAI-compatible server, local or hosted.

`home` is the adapter's private directory: the CLI's CODEX_HOME (its thread rollouts,
kept for native resume), its TMPDIR, and the session -> thread records.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from runtime.harness.base import Unavailable
from runtime.harness.codex.cli import INSTALL_HINT, Cli
from runtime.proto.capabilities import AgentKindCapabilities
from runtime.proto.execution import ExecutionConfiguration

if TYPE_CHECKING:
    from runtime.harness.codex.executor import CodexExecutor

DECLARATION = AgentKindCapabilities(
    subagent_observations=False,
    streaming=True,
    permissions=True,
    usage=True,
    resume=False,
    native_session_recovery=True,
    steering=True,
    message_items=True,
    tool_observations=True,
    environment_none=True,
    local_environment=True,
    preparation=True,
    workspace_read_preparation=True,
    workspace_output_export=True,
    programmatic_tool_calling_disable=True,
    web_search_control=True,
    execution_controls=True,
    text_verbosity=False,
    structured_output=False,
    tool_search=False,
    message_images=True,
    function_result_images=False,
    subagent_control=True,
    durable_input_receipts=True,
    durable_turns=True,
    function_tools=False,
    mcp_http_tools=False,
    mcp_http_required=False,
    mcp_http_bearer_auth=False,
)


class CodexHarness:
    kind = "codex"
    declaration = DECLARATION

    def __init__(self, cli: Cli | None, home: Path) -> None:
        self._cli = cli
        self._home = home
        self.version = cli.version if cli is not None else ""

    def available(self) -> bool:
        return self._cli is not None

    async def create_executor(
        self, executor_id: str, configuration: ExecutionConfiguration
    ) -> CodexExecutor:
        """The session's Executor; raises Unavailable without the CLI or a `responses`
        model provider. The CLI process starts with the first turn."""
        if self._cli is None:
            raise Unavailable(f"the codex harness needs {INSTALL_HINT}")
        provider = configuration.agent_options.model_provider
        if provider is None or provider.protocol != "responses":
            raise Unavailable("the codex harness needs a model provider speaking responses")
        # Imported with the first Executor, not at start-up (a plain import statement, so
        # the frozen build still carries it).
        from runtime.harness.codex.executor import CodexExecutor

        return CodexExecutor(executor_id, configuration, provider, self._cli, self._home)
