"""Request bodies of the public API as msgspec Structs, decoded strictly.

`UNSET` marks an omitted field, `None` an explicit null: update semantics differ.
corebox-only settings travel under the single extension key `x_corebox`.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec
from msgspec import UNSET, UnsetType

from allinone.core.shapes.template_models import EnvironmentParam
from allinone.core.shapes.tool_models import PersistedToolParam, SessionToolParam

Metadata = dict[str, str]
NonEmpty = Annotated[str, msgspec.Meta(min_length=1)]
Model = Annotated[str, msgspec.Meta(min_length=1, max_length=256)]

_STRICT: dict[str, Any] = {"forbid_unknown_fields": True}
# The most a body creating or updating an agent (`AgentCreate`, `AgentUpdate`) may take,
# and one creating a session (`SessionCreate`), as JSON.
MAX_AGENT_BODY_BYTES = 4 * 1024 * 1024
MAX_SESSION_BODY_BYTES = 16 * 1024 * 1024
# The most a submitted sign-in's values and chosen option may take as JSON.
_SIGN_IN_BYTES = 120 * 1024


class InputTextParam(msgspec.Struct, tag="input_text", tag_field="type", **_STRICT):
    text: str


class InputImageParam(msgspec.Struct, tag="input_image", tag_field="type", **_STRICT):
    image_url: NonEmpty


InputContentParam = InputTextParam | InputImageParam


class InputMessageParam(msgspec.Struct, **_STRICT):
    role: Literal["user"]
    content: list[InputContentParam]
    type: Literal["message"] | UnsetType = UNSET


class ReasoningParam(msgspec.Struct, **_STRICT):
    effort: Literal["none", "minimal", "low", "medium", "high", "xhigh", "max"] | None = None
    summary: Literal["concise", "detailed", "auto"] | None = None


class TextFormatTextParam(msgspec.Struct, tag="text", tag_field="type", **_STRICT):
    pass


class TextFormatJsonSchemaParam(msgspec.Struct, tag="json_schema", tag_field="type", **_STRICT):
    """A JSON Schema the generated text must match; stored and shown as given."""

    schema: dict[str, Any]
    name: Annotated[str, msgspec.Meta(max_length=64)] | UnsetType = UNSET
    strict: bool | UnsetType = UNSET
    description: str | UnsetType = UNSET


TextFormatParam = TextFormatTextParam | TextFormatJsonSchemaParam


class TextParam(msgspec.Struct, **_STRICT):
    format: TextFormatParam | None = None
    verbosity: Literal["low", "medium", "high"] | None = None


class MultiAgentParam(msgspec.Struct, **_STRICT):
    enabled: bool
    max_concurrent_subagents: Annotated[int, msgspec.Meta(ge=1, le=64)] | UnsetType | None = UNSET


class PromptCacheOptionsParam(msgspec.Struct, **_STRICT):
    ttl: Literal["30m", "12h"] | UnsetType = UNSET


class SpendControlParam(msgspec.Struct, **_STRICT):
    """A positive limit in USD cents, or null for none."""

    limit: Annotated[int, msgspec.Meta(ge=1)] | None


class CompactionParam(msgspec.Struct, **_STRICT):
    async_: bool | None = msgspec.field(default=None, name="async")


class ExperimentalParam(msgspec.Struct, **_STRICT):
    time_awareness: bool | UnsetType = UNSET


ServiceTier = Literal["auto", "default", "flex", "priority", "fast", "ultrafast"]


class AgentExtensionParam(msgspec.Struct, **_STRICT):
    """corebox settings of an agent (`x_corebox`); `allinone.core.agents` checks the
    harness name and tool policy, `allinone.core.model_providers` the provider."""

    harness: Annotated[str, msgspec.Meta(max_length=64)] | UnsetType | None = UNSET
    model_provider: dict[str, Any] | UnsetType | None = UNSET
    tool_policy: dict[str, str] | UnsetType | None = UNSET
    # On an agent update: the version the caller last read (409 when another update
    # made a newer one). Never stored.
    expected_version: Annotated[int, msgspec.Meta(ge=1)] | UnsetType = UNSET


class SessionExtensionParam(msgspec.Struct, **_STRICT):
    """corebox settings of a session create: a model provider and a tool policy that
    override the agent's."""

    model_provider: dict[str, Any] | UnsetType | None = UNSET
    tool_policy: dict[str, str] | UnsetType | None = UNSET
    # A saved agent's version to run, or the deployment pointer naming it (default
    # `latest`); only with `agent_id`.
    agent_version: Annotated[int, msgspec.Meta(ge=1)] | UnsetType = UNSET
    deployment: Annotated[str, msgspec.Meta(min_length=1, max_length=64)] | UnsetType = UNSET
    # Each turn of the session fails with `turn_deadline_exceeded` once it has run this
    # long (it is cancelled at that point).
    turn_deadline_seconds: Annotated[int, msgspec.Meta(ge=1, le=86400)] | UnsetType = UNSET


class AgentCreate(msgspec.Struct, **_STRICT):
    model: Model
    name: str | UnsetType | None = UNSET
    instructions: str | UnsetType | None = UNSET
    metadata: Metadata | UnsetType | None = UNSET
    service_tier: ServiceTier | UnsetType | None = UNSET
    reasoning: ReasoningParam | UnsetType | None = UNSET
    text: TextParam | UnsetType | None = UNSET
    tools: list[PersistedToolParam] | UnsetType | None = UNSET
    multi_agent: MultiAgentParam | UnsetType | None = UNSET
    compaction: CompactionParam | UnsetType | None = UNSET
    experimental: ExperimentalParam | UnsetType = UNSET
    x_corebox: AgentExtensionParam | UnsetType = UNSET


class AgentUpdate(msgspec.Struct, **_STRICT):
    """Omitted keeps, null clears or resets; metadata and tools are replaced whole,
    experimental is merged by key."""

    model: Model | UnsetType = UNSET
    name: str | UnsetType | None = UNSET
    instructions: str | UnsetType | None = UNSET
    metadata: Metadata | UnsetType | None = UNSET
    service_tier: ServiceTier | UnsetType | None = UNSET
    reasoning: ReasoningParam | UnsetType | None = UNSET
    text: TextParam | UnsetType | None = UNSET
    tools: list[PersistedToolParam] | UnsetType | None = UNSET
    multi_agent: MultiAgentParam | UnsetType | None = UNSET
    compaction: CompactionParam | UnsetType | None = UNSET
    experimental: ExperimentalParam | UnsetType = UNSET
    x_corebox: AgentExtensionParam | UnsetType = UNSET


class SessionAgentParam(msgspec.Struct, **_STRICT):
    model: Model | UnsetType = UNSET
    instructions: str | UnsetType | None = UNSET
    tools: list[SessionToolParam] | UnsetType | None = UNSET
    reasoning: ReasoningParam | UnsetType | None = UNSET
    text: TextParam | UnsetType | None = UNSET
    service_tier: ServiceTier | UnsetType | None = UNSET
    multi_agent: MultiAgentParam | UnsetType | None = UNSET
    compaction: CompactionParam | UnsetType | None = UNSET
    experimental: ExperimentalParam | UnsetType = UNSET
    x_corebox: AgentExtensionParam | UnsetType = UNSET


class StreamOptions(msgspec.Struct, **_STRICT):
    include_obfuscation: bool | UnsetType = UNSET


class SessionCreate(msgspec.Struct, **_STRICT):
    environment: EnvironmentParam
    agent_id: NonEmpty | UnsetType = UNSET
    agent: SessionAgentParam | UnsetType = UNSET
    input: str | list[InputMessageParam] | UnsetType | None = UNSET
    metadata: Metadata | UnsetType | None = UNSET
    vault_ids: list[str] | UnsetType | None = UNSET
    prompt_cache_options: PromptCacheOptionsParam | UnsetType | None = UNSET
    review: Literal["none", "auto_review"] | UnsetType = UNSET
    spend_control: SpendControlParam | UnsetType | None = UNSET
    stream: bool | UnsetType = UNSET
    stream_options: StreamOptions | UnsetType = UNSET
    x_corebox: SessionExtensionParam | UnsetType = UNSET


class MessageInputEvent(
    msgspec.Struct, tag="agent.session.input.message", tag_field="type", **_STRICT
):
    input: list[InputMessageParam]


class CancelInputEvent(
    msgspec.Struct, tag="agent.session.input.cancel", tag_field="type", **_STRICT
):
    pass


class ToolResultInputEvent(
    msgspec.Struct, tag="agent.session.input.tool_result", tag_field="type", **_STRICT
):
    turn_id: str
    call_id: str
    success: bool
    output: str | list[InputContentParam] | None = None
    error: str | None = None


class McpApprovalResponse(msgspec.Struct, **_STRICT):
    type: Literal["mcp_tool_call"]
    decision: Literal["approve", "deny", "cancel"]


class McpApprovalResultInputEvent(
    msgspec.Struct,
    tag="agent.session.input.mcp_approval_request_result",
    tag_field="type",
    **_STRICT,
):
    request_id: NonEmpty
    response: McpApprovalResponse


class BrowserFieldParam(msgspec.Struct, **_STRICT):
    field_id: NonEmpty
    value: str


class BrowserAuthenticationResponse(
    msgspec.Struct, tag="browser_authentication", tag_field="type", **_STRICT
):
    """A sign-in form's answer: its values (`submit`) or a refusal to sign in (`cancel`)."""

    action: Literal["submit", "cancel"]
    fields: Annotated[list[BrowserFieldParam], msgspec.Meta(max_length=6)] | UnsetType = UNSET
    selected_option: str | UnsetType | None = UNSET

    def __post_init__(self) -> None:
        if self.action == "cancel":
            if self.fields is not UNSET or self.selected_option is not UNSET:
                raise ValueError("A cancelled sign-in carries no `fields` or `selected_option`")
            return
        if self.fields is UNSET:
            raise ValueError("A submitted sign-in needs `fields`")
        values = {field.field_id: field.value for field in self.fields}
        if len(values) != len(self.fields):
            raise ValueError("Each field is submitted at most once")
        option = None if self.selected_option is UNSET else self.selected_option
        if len(msgspec.json.encode([values, option])) > _SIGN_IN_BYTES:
            raise ValueError("The submitted fields and option must fit in 120 KiB of JSON")


class BrowserOriginAccessResponse(
    msgspec.Struct, tag="browser_origin_access", tag_field="type", **_STRICT
):
    decision: Literal["approve", "deny", "cancel"]


class ComputerUseApprovalResultInputEvent(
    msgspec.Struct,
    tag="agent.session.input.computer_use_approval_request_result",
    tag_field="type",
    **_STRICT,
):
    request_id: NonEmpty
    response: BrowserAuthenticationResponse | BrowserOriginAccessResponse


class QuestionAnswerParam(msgspec.Struct, **_STRICT):
    question_id: NonEmpty
    answers: list[str]


class UserChoiceInputEvent(
    msgspec.Struct, tag="x_corebox.input.user_choice", tag_field="type", **_STRICT
):
    """corebox extension: the answer to an `x_corebox_user_choice` prompt."""

    ask_id: NonEmpty
    question_answers: list[QuestionAnswerParam] = []
    cancelled: bool = False


InputEvent = (
    MessageInputEvent
    | CancelInputEvent
    | ToolResultInputEvent
    | McpApprovalResultInputEvent
    | ComputerUseApprovalResultInputEvent
    | UserChoiceInputEvent
)


class InputEvents(msgspec.Struct, **_STRICT):
    events: Annotated[list[InputEvent], msgspec.Meta(max_length=64)]


class SessionAgentUpdate(msgspec.Struct, **_STRICT):
    model: Model | UnsetType = UNSET
    reasoning: ReasoningParam | UnsetType | None = UNSET
    service_tier: ServiceTier | UnsetType | None = UNSET
    tools: list[SessionToolParam] | UnsetType | None = UNSET


class SessionUpdate(msgspec.Struct, **_STRICT):
    agent: SessionAgentUpdate | UnsetType = UNSET
    metadata: Metadata | UnsetType | None = UNSET
    prompt_cache_options: PromptCacheOptionsParam | UnsetType | None = UNSET
    review: Literal["none", "auto_review"] | UnsetType = UNSET
    spend_control: SpendControlParam | UnsetType | None = UNSET
