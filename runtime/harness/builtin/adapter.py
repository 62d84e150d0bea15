"""`builtin`: a model/tool loop against any OpenAI-compatible endpoint, through the
official `openai` package (`AsyncOpenAI(base_url=..., api_key=...)`).

The model comes from `agent_options.model_provider` (protocol `chat_completions` or
`responses`, base URL, API key, optional context window and output limit) and
`agent_options.model`; Core sends both only for sessions that froze a provider. One
Executor serves one session: it keeps the conversation across turns and one HTTP client
for the provider, closed with the Executor. A new Executor rebuilds the conversation
from the committed history Core sends with the start, so it declares
`native_session_recovery`: a session that already ran turns continues on any Runtime.
The API key lives only inside that client; it is never logged.
`agent_options.harness_config.tool_policy.run_command` (`ask`, the default, `allow` or
`deny`) decides whether workspace commands ask for permission. A turn checkpoints before
each model call (`between_model_calls`, cursor.py), while it waits for a function's
result (`awaiting_function_result`) or a command's approval (`awaiting_approval`), and
declares `resume`: a paused, drained or crashed turn continues there on a new Run
without repeating any tool call. Every model call is bounded (`ModelTimeouts`,
timeouts.py): a server that does not answer, or stops sending, fails the turn as
`request_timeout`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from runtime.harness.base import Unavailable
from runtime.harness.builtin.timeouts import ModelTimeouts
from runtime.proto.capabilities import AgentKindCapabilities
from runtime.proto.execution import ExecutionConfiguration

if TYPE_CHECKING:
    from runtime.harness.builtin.executor import BuiltinExecutor

MODEL_RETRIES = 2  # the SDK's own retries of connection errors, 408, 409, 429 and 5xx

DECLARATION = AgentKindCapabilities(
    subagent_observations=True,
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


class BuiltinHarness:
    kind = "builtin"
    version = "1"
    declaration = DECLARATION

    def __init__(
        self, *, timeouts: ModelTimeouts | None = None, retries: int = MODEL_RETRIES
    ) -> None:
        self._timeouts = timeouts or ModelTimeouts()
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
        if provider.protocol == "anthropic_messages":
            raise Unavailable("the builtin harness does not speak anthropic_messages")
        # Imported here so `openai` and `mcp` load with the first builtin Executor, not
        # at start-up; a plain import statement, so the frozen build still carries them.
        from runtime.harness.builtin.executor import create

        return create(executor_id, configuration, provider, self._timeouts, self._retries)
