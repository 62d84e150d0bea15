"""The `builtin` Executor: one session's model/tool loop and its provider client.

Importing this module loads the `openai` and `mcp` packages; `adapter` imports it only
when the first builtin Executor is created, so a server that never runs a builtin
session does not pay for them.
"""

from __future__ import annotations

import logging

import openai

from runtime.harness.base import RunContext
from runtime.harness.builtin.chat import ChatCompletions
from runtime.harness.builtin.conversation import Conversation
from runtime.harness.builtin.delegation import Delegation
from runtime.harness.builtin.mcp_servers import McpServers, McpTool
from runtime.harness.builtin.model import ModelProtocol, Settings
from runtime.harness.builtin.responses import Responses
from runtime.harness.builtin.skills import with_skills
from runtime.harness.builtin.timeouts import ModelTimeouts
from runtime.harness.builtin.tools import Toolbox
from runtime.harness.builtin.turn import BuiltinTurn
from runtime.harness.builtin.workspace_tools import WorkspaceTools
from runtime.harness.subagents import allowed as subagents_allowed
from runtime.proto.execution import ExecutionConfiguration, ModelProvider
from runtime.proto.inputs import MessageInput

log = logging.getLogger(__name__)


class BuiltinExecutor:
    def __init__(
        self, executor_id: str, configuration: ExecutionConfiguration, protocol: ModelProtocol
    ) -> None:
        self.executor_id = executor_id
        self._configuration = configuration
        self._protocol = protocol
        options = configuration.agent_options
        provider = options.model_provider
        controls = configuration.execution_controls
        self._settings = Settings(
            model=options.model,
            output_schema=controls.output_format.schema if controls.output_format else None,
            verbosity=controls.text_verbosity,
            reasoning_effort=controls.reasoning_effort,
            max_output_tokens=provider.max_output_tokens if provider else 0,
        )
        self._context_window = provider.context_window if provider else 0
        self._conversation = Conversation(
            system_prompt=with_skills(options.system_prompt, configuration)
        )
        harness_config = options.harness_config or {}
        policy = harness_config.get("tool_policy") or {}
        self._command_policy = str(policy.get("run_command") or "ask")
        disabled = harness_config.get("disabled_tools") or {}
        self._disabled = {str(k): int(v) for k, v in disabled.items() if isinstance(v, int)}
        self._offline = harness_config.get("egress") == "loopback_only"
        # MCP tools earlier turns saw, offered again while their server is unreachable.
        self._mcp_known: dict[str, McpTool] = {}

    async def run(self, run_id: str, messages: MessageInput, context: RunContext) -> None:
        """Play one turn, or continue it from a checkpoint's cursor. A start that
        carries the session's history rebuilds the conversation from it first (Core's
        committed items are the record)."""
        if context.history is not None:
            self._conversation.rebuild(context.history)
            log.info(
                "builtin executor %s rebuilt its context from %d entries",
                self.executor_id,
                len(context.history),
            )
        servers = self._configuration.mcp_http_servers or []
        mcp = McpServers(servers, self._mcp_known) if servers else None
        root = context.workspace
        # Under an `egress: loopback_only` overlay commands run without network.
        sandbox = context.sandbox.without_network() if self._offline else context.sandbox
        workspace = (
            WorkspaceTools(
                root,
                sandbox,
                self._command_policy,
                self._configuration.command_environment,
            )
            if root is not None
            else None
        )
        try:
            if mcp is not None:
                await mcp.open()
                self._mcp_known = dict(mcp.tools)
            turn = BuiltinTurn(
                context,
                self._conversation,
                self._protocol,
                Toolbox(
                    self._configuration.function_tools,
                    mcp,
                    workspace,
                    Delegation(
                        self._configuration,
                        self._protocol,
                        self._settings,
                        self._conversation.system_prompt,
                    )
                    if subagents_allowed(self._configuration)
                    else None,
                    self._disabled,
                ),
                self._settings,
                self._context_window,
            )
            await turn.play(messages, context.resume_cursor)
        finally:
            if mcp is not None:
                await mcp.close()

    async def close(self) -> None:
        await self._protocol.close()


def create(
    executor_id: str,
    configuration: ExecutionConfiguration,
    provider: ModelProvider,
    timeouts: ModelTimeouts,
    retries: int,
) -> BuiltinExecutor:
    client = openai.AsyncOpenAI(
        base_url=provider.base_url,
        api_key=provider.api_key,
        # CallClock bounds every wait of a call (timeouts.py); the client's own read
        # timeout only backs it up, so its retries never start a read past the call.
        timeout=openai.Timeout(timeouts.total, connect=min(timeouts.connect, timeouts.idle)),
        max_retries=retries,
    )
    protocol: ModelProtocol = (
        Responses(client, timeouts)
        if provider.protocol == "responses"
        else ChatCompletions(client, timeouts)
    )
    log.info("builtin executor %s speaks %s", executor_id, provider.protocol)
    return BuiltinExecutor(executor_id, configuration, protocol)
