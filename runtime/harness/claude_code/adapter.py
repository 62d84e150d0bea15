"""`claude_code`: an installed Claude Code CLI as a harness.

The model endpoint is the session's `agent_options.model_provider` when Core sends one:
its `base_url` must speak the Anthropic Messages API and becomes `ANTHROPIC_BASE_URL`,
its API key `ANTHROPIC_API_KEY` (the key lives only in the CLI's environment, never in a
log). Without one, the CLI uses its own login. `agent_options.model` is passed as
`--model`, the system prompt is appended to Claude Code's own.

Availability: the CLI is found (`command`, else `claude` on PATH) and its version is one
this adapter knows (cli.KNOWN_VERSIONS). The check runs once, when the adapter is built;
`version` is the CLI's version, or "" without a usable CLI.

Declaration: streaming text and thinking, tool observations, permissions (Claude Code's
permission prompts through the stdio control protocol), steering (written to the CLI as
further user messages at its next event; they join its next model call), usage,
workspaces, and resume of the native session (`native_session_recovery`). Not
supported: function tools, HTTP MCP tools from the session, structured output, images,
text verbosity, web search control, tool search, subagent observations.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from runtime.harness.base import Unavailable
from runtime.harness.claude_code import cli
from runtime.proto.capabilities import AgentKindCapabilities
from runtime.proto.execution import ExecutionConfiguration

if TYPE_CHECKING:
    from runtime.harness.claude_code.executor import ClaudeCodeExecutor

DECLARATION = AgentKindCapabilities(
    subagent_observations=False,
    streaming=True,
    permissions=True,
    usage=True,
    resume=True,
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
    web_search_control=False,
    execution_controls=True,
    text_verbosity=False,
    structured_output=False,
    tool_search=False,
    message_images=False,
    function_result_images=False,
    subagent_control=True,
    durable_input_receipts=True,
    durable_turns=True,
    function_tools=False,
    mcp_http_tools=False,
    mcp_http_required=False,
    mcp_http_bearer_auth=False,
)


def installed_version(command: str | None = None) -> str | None:
    """The installed CLI's version when this adapter knows it, else None."""
    version = cli.installed_version(command)
    return version if cli.known(version) else None


class ClaudeCodeHarness:
    kind = "claude_code"
    declaration = DECLARATION

    def __init__(self, *, command: str | None = None, config_dir: Path | None = None) -> None:
        """`config_dir` becomes the CLI's CLAUDE_CONFIG_DIR (its settings and session
        transcripts); None keeps the user's own."""
        self._path = cli.locate(command)
        self._config_dir = config_dir
        self.version = (installed_version(self._path) or "") if self._path else ""

    def available(self) -> bool:
        return bool(self.version)

    async def create_executor(
        self, executor_id: str, configuration: ExecutionConfiguration
    ) -> ClaudeCodeExecutor:
        """Raises Unavailable when the CLI is missing or of a version not known here."""
        if self._path is None or not self.version:
            raise Unavailable(f"Claude Code {cli.KNOWN_RANGE} is not installed; {cli.INSTALL_HINT}")
        provider = configuration.agent_options.model_provider
        if provider is not None and provider.protocol != "anthropic_messages":
            raise Unavailable("the claude_code harness speaks only anthropic_messages")
        # Imported with the first Executor, not at start-up (a plain import statement, so
        # the frozen build still carries it).
        from runtime.harness.claude_code.executor import ClaudeCodeExecutor

        return ClaudeCodeExecutor(executor_id, configuration, self._path, self._config_dir)
