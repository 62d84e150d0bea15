"""`builtin`: a model/tool loop against any OpenAI-compatible endpoint, through the
official `openai` package (`AsyncOpenAI(base_url=..., api_key=...)`).

The model comes from `agent_options.model_provider` (protocol `chat_completions` or
`responses`, base URL, API key, optional context window and output limit) and
`agent_options.model`; Core sends both only for sessions that froze a provider. One
Executor serves one session: it keeps the conversation across turns and one HTTP client
for the provider, closed with the Executor. The API key lives only inside that client;
it is never logged. `agent_options.harness_config.tool_policy.run_command` (`ask`, the
default, `allow` or `deny`) decides whether workspace commands ask for permission.
"""

from __future__ import annotations

import logging

import openai

from runtime.harness.base import RunContext, Unavailable
from runtime.harness.builtin.chat import ChatCompletions
from runtime.harness.builtin.conversation import Conversation
from runtime.harness.builtin.mcp_servers import McpServers
from runtime.harness.builtin.model import ModelProtocol, Settings
from runtime.harness.builtin.responses import Responses
from runtime.harness.builtin.tools import Toolbox
from runtime.harness.builtin.turn import BuiltinTurn
from runtime.harness.builtin.workspace_tools import WorkspaceTools
from runtime.proto.capabilities import AgentKindCapabilities
from runtime.proto.execution import ExecutionConfiguration
from runtime.proto.inputs import MessageInput

log = logging.getLogger(__name__)

MODEL_TIMEOUT_SECONDS = 600.0
MODEL_RETRIES = 2  # the SDK's own retries of connection errors, 408, 409, 429 and 5xx

DECLARATION = AgentKindCapabilities(
    subagent_observations=False,
    streaming=True,
    permissions=True,
    usage=True,
    resume=False,
    native_session_recovery=False,
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
    text_verbosity=True,
    structured_output=True,
    tool_search=False,
    message_images=True,
    function_result_images=False,
    subagent_control=True,
    durable_input_receipts=True,
    durable_turns=True,
    function_tools=True,
    mcp_http_tools=True,
    mcp_http_required=True,
    mcp_http_bearer_auth=True,
)


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
        self._conversation = Conversation(system_prompt=options.system_prompt)
        policy = (options.harness_config or {}).get("tool_policy") or {}
        self._command_policy = str(policy.get("run_command") or "ask")

    async def run(self, run_id: str, messages: MessageInput, context: RunContext) -> None:
        servers = self._configuration.mcp_http_servers or []
        mcp = McpServers(servers) if servers else None
        root = context.workspace
        workspace = WorkspaceTools(root, self._command_policy) if root is not None else None
        try:
            if mcp is not None:
                await mcp.open()
            turn = BuiltinTurn(
                context,
                self._conversation,
                self._protocol,
                Toolbox(self._configuration.function_tools, mcp, workspace),
                self._settings,
                self._context_window,
            )
            await turn.play(messages)
        finally:
            if mcp is not None:
                await mcp.close()

    async def close(self) -> None:
        await self._protocol.close()


class BuiltinHarness:
    kind = "builtin"
    version = "1"
    declaration = DECLARATION

    def __init__(
        self, *, timeout_seconds: float = MODEL_TIMEOUT_SECONDS, retries: int = MODEL_RETRIES
    ) -> None:
        self._timeout = timeout_seconds
        self._retries = retries

    def available(self) -> bool:
        return True

    async def create_executor(
        self, executor_id: str, configuration: ExecutionConfiguration
    ) -> BuiltinExecutor:
        """Build the session's Executor; raises Unavailable without a model provider."""
        provider = configuration.agent_options.model_provider
        if provider is None:
            raise Unavailable("the builtin harness needs a model provider")
        client = openai.AsyncOpenAI(
            base_url=provider.base_url,
            api_key=provider.api_key,
            timeout=self._timeout,
            max_retries=self._retries,
        )
        protocol: ModelProtocol
        if provider.protocol == "responses":
            protocol = Responses(client)
        else:
            protocol = ChatCompletions(client)
        log.info("builtin executor %s speaks %s", executor_id, provider.protocol)
        return BuiltinExecutor(executor_id, configuration, protocol)
