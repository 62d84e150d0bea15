"""Execution admission: `execution_prepare`, `execution_start`, `execution_release` and
the `preparation_status` replies, with the preparation lifecycle in one place.

    preparing -> ready -> starting -> started
        |          |          |
        +----------+----------+--> failed | released | expired

A reused healthy Executor answers `ready` directly. `rejected` is a control-operation
reply: it carries `operation` and an error code and never replaces a handle's revision.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Literal

import msgspec

from runtime.proto.errors import PreparationErrorCode, ValidationError
from runtime.proto.inputs import MessageInput, validate_message_input

_STRICT: dict[str, Any] = {"frozen": True, "forbid_unknown_fields": True, "omit_defaults": True}


class PreparationState(StrEnum):
    PREPARING = "preparing"
    READY = "ready"
    STARTING = "starting"
    STARTED = "started"
    RELEASED = "released"
    EXPIRED = "expired"
    FAILED = "failed"
    REJECTED = "rejected"


TERMINAL_PREPARATION_STATES = frozenset(
    {
        PreparationState.STARTED,
        PreparationState.RELEASED,
        PreparationState.EXPIRED,
        PreparationState.FAILED,
    }
)

PREPARATION_TRANSITIONS: dict[PreparationState, frozenset[PreparationState]] = {
    PreparationState.PREPARING: frozenset(
        {
            PreparationState.READY,
            PreparationState.FAILED,
            PreparationState.RELEASED,
            PreparationState.EXPIRED,
        }
    ),
    PreparationState.READY: frozenset(
        {
            PreparationState.STARTING,
            PreparationState.RELEASED,
            PreparationState.EXPIRED,
            PreparationState.FAILED,
        }
    ),
    PreparationState.STARTING: frozenset({PreparationState.STARTED, PreparationState.FAILED}),
    PreparationState.STARTED: frozenset(),
    PreparationState.RELEASED: frozenset(),
    PreparationState.EXPIRED: frozenset(),
    PreparationState.FAILED: frozenset(),
}


class IllegalPreparationTransition(ValidationError):
    def __init__(self, current: PreparationState, target: PreparationState) -> None:
        super().__init__("invalid_transition", f"preparation cannot move {current} -> {target}")


def check_preparation_transition(current: PreparationState, target: PreparationState) -> None:
    if target not in PREPARATION_TRANSITIONS[current]:
        raise IllegalPreparationTransition(current, target)


class ModelProvider(msgspec.Struct, **_STRICT):
    protocol: Literal["chat_completions", "responses"]
    base_url: str
    api_key: str
    context_window: int = 0
    max_output_tokens: int = 0


class AgentOptions(msgspec.Struct, **_STRICT):
    """The only keys Core sends; any other key is rejected before preparation."""

    model: str
    system_prompt: str = ""
    model_provider: ModelProvider | None = None
    harness_config: dict[str, Any] | None = None


class OutputFormat(msgspec.Struct, **_STRICT):
    type: Literal["json_schema"]
    schema: dict[str, Any]


class ExecutionControls(msgspec.Struct, **_STRICT):
    web_search: Literal["disabled"]
    text_verbosity: Literal["low", "medium", "high"]
    disable_programmatic_tool_calling: bool
    output_format: OutputFormat | None = None


class FunctionTool(msgspec.Struct, **_STRICT):
    name: str
    description: str = ""
    parameters: dict[str, Any] | None = None
    defer_loading: bool = False


class LocalEnvironment(msgspec.Struct, **_STRICT):
    """The exact Environment binding; the Runtime checks the directory against its own."""

    id: str
    type: Literal["openai_hosted", "self_hosted"]


class ExecutionConfiguration(msgspec.Struct, **_STRICT):
    agent_kind: str
    agent_options: AgentOptions
    execution_controls: ExecutionControls
    observe_messages: bool = False
    observe_subagent_identities: bool = False
    disable_subagents: bool = False
    disable_execution_environment: bool = False
    local_environment: LocalEnvironment | None = None
    require_existing_native_session: bool = False
    agent_session_id: str = ""
    function_tools: list[FunctionTool] = []
    workspace_read_only: bool = False


class ExecutionPrepare(msgspec.Struct, **_STRICT):
    session_id: str
    configuration: ExecutionConfiguration

    def validate(self) -> None:
        cfg = self.configuration
        if not self.session_id:
            raise ValidationError(PreparationErrorCode.INVALID_REQUEST, "session_id is required")
        if (cfg.local_environment is None) == (not cfg.disable_execution_environment):
            raise ValidationError(
                PreparationErrorCode.UNSUPPORTED_CONFIGURATION,
                "exactly one of local_environment and disable_execution_environment is required",
            )


class ExecutionStart(msgspec.Struct, **_STRICT):
    executor_id: str
    handle: str
    run_id: str
    input: MessageInput

    def validate(self) -> None:
        if not (self.executor_id and self.handle and self.run_id):
            raise ValidationError(PreparationErrorCode.INVALID_START, "start needs ids")
        try:
            validate_message_input(self.input)
        except ValidationError as exc:
            raise ValidationError(PreparationErrorCode.INVALID_START, str(exc)) from exc


class ExecutionRelease(msgspec.Struct, **_STRICT):
    handle: str


class PreparationStatus(
    msgspec.Struct, frozen=True, forbid_unknown_fields=False, omit_defaults=True
):
    revision: int
    state: PreparationState
    executor_id: str = ""
    reused: bool = False
    handle: str = ""
    expires_at: int = 0
    run_id: str = ""
    error_code: str = ""
    operation: str = ""
