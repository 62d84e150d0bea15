"""Execution admission: `execution_prepare`, `execution_start`, `execution_release` and
the `preparation_status` replies, with the preparation lifecycle in one place.

    preparing -> ready -> starting -> started
        |          |          |
        +----------+----------+--> failed | released | expired

A reused healthy Executor answers `ready` directly. `rejected` is a control-operation
reply: it carries `operation` and an error code and never replaces a handle's revision.
"""

from __future__ import annotations

import re
from enum import StrEnum
from typing import Any, Literal
from urllib.parse import urlsplit

import msgspec

from runtime.proto import limits
from runtime.proto.errors import PreparationErrorCode, ValidationError
from runtime.proto.history import HistoryEntry, validate_history
from runtime.proto.identities import validate_frame_id
from runtime.proto.initialization import CapabilitySources
from runtime.proto.inputs import MessageInput, validate_message_input
from runtime.proto.strictness import STRICT

_STRICT = STRICT


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
    """Where a model harness reaches its model (`AgentOptions.model` names the model).
    `api_key` is a secret: it is never logged or echoed in an error."""

    protocol: Literal["chat_completions", "responses", "anthropic_messages"]
    base_url: str
    api_key: str
    context_window: int = 0
    max_output_tokens: int = 0

    def validate(self) -> None:
        """Raises ValidationError(`invalid_configuration`); the text never quotes a value."""
        code = PreparationErrorCode.INVALID_CONFIGURATION
        parts = urlsplit(self.base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValidationError(code, "model_provider.base_url must be an http(s) URL")
        if parts.username or parts.password or parts.query or parts.fragment:
            raise ValidationError(
                code, "model_provider.base_url takes no credentials, query or fragment"
            )
        key = self.api_key.encode()
        if (
            not key.strip()
            or len(key) > limits.MAX_API_KEY_BYTES
            or any(ch in self.api_key for ch in "\x00\r\n")
        ):
            raise ValidationError(code, "model_provider.api_key is blank, too long or unsafe")
        if self.context_window < 0 or self.max_output_tokens < 0:
            raise ValidationError(code, "model_provider token limits must not be negative")
        if self.context_window and self.max_output_tokens > self.context_window:
            raise ValidationError(
                code, "model_provider.max_output_tokens exceeds the context window"
            )


class AgentOptions(msgspec.Struct, **_STRICT):
    """The only keys Core sends; any other key is rejected before preparation."""

    model: str
    system_prompt: str = ""
    model_provider: ModelProvider | None = None
    harness_config: dict[str, Any] | None = None


class OutputFormat(msgspec.Struct, **_STRICT):
    type: Literal["json_schema"]
    schema: dict[str, Any]


ReasoningEffort = Literal["none", "minimal", "low", "medium", "high", "xhigh", "max"]


class ExecutionControls(msgspec.Struct, **_STRICT):
    """Explicit opt-ins; the adapter maps them to native option names. An absent
    `reasoning_effort` leaves the model's default."""

    web_search: Literal["disabled"]
    text_verbosity: Literal["low", "medium", "high"]
    disable_programmatic_tool_calling: bool
    output_format: OutputFormat | None = None
    reasoning_effort: ReasoningEffort | None = None


class FunctionTool(msgspec.Struct, **_STRICT):
    name: str
    description: str = ""
    parameters: dict[str, Any] | None = None
    defer_loading: bool = False


class MCPHTTPServer(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One HTTP MCP server for this Run. `bearer_token` is the credential Core resolved
    from a vault (a secret: never logged); `headers` are the tool's non-secret headers.
    `allowed_tools` null means every tool the server lists. `connection_origin` is
    explicit (Core freezes the default); in corebox both origins connect from the
    Runtime's host, so the origin does not restrict the environment type."""

    connection_origin: Literal["service", "environment"]
    server_label: str
    server_url: str
    allowed_tools: list[str] | None
    required: bool = False
    bearer_token: str = ""
    headers: dict[str, str] = {}

    def validate(self) -> None:
        code = PreparationErrorCode.INVALID_CONFIGURATION
        parts = urlsplit(self.server_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValidationError(code, "an MCP server_url must be an http(s) URL")
        if not self.server_label:
            raise ValidationError(code, "an MCP server needs a server_label")
        if any(ch in self.bearer_token for ch in "\x00\r\n"):
            raise ValidationError(code, "an MCP bearer token is unsafe")


class WorkspaceSeed(msgspec.Struct, **_STRICT):
    """Where a new managed workspace starts from: the snapshot `snapshot` of the managed
    workspace of Environment `environment_id` (its canonical UUID), as the Runtime took
    it at the end of that Run (`done.workspace_snapshot`)."""

    environment_id: str
    snapshot: str


class LocalEnvironment(msgspec.Struct, **_STRICT):
    """The exact Environment binding. `id` is the Environment's canonical UUID. A
    `self_hosted` binding names the directory the user chose, which the Runtime checks
    against what it is willing to serve; an `openai_hosted` one names none: the Runtime
    owns where its managed workspaces live. `seed` (managed only) fills the workspace
    from a snapshot when the Runtime creates it (a forked session's copy); once the
    workspace exists it is ignored."""

    id: str
    type: Literal["openai_hosted", "self_hosted"]
    workspace_directory: str = ""
    # What the workspace's initialization installed: each skill is at
    # `/workspace/.skills/<name>/` with its SKILL.md.
    capability_sources: CapabilitySources | None = None
    seed: WorkspaceSeed | None = None


class ExecutionConfiguration(msgspec.Struct, **_STRICT):
    agent_kind: str
    agent_options: AgentOptions
    execution_controls: ExecutionControls
    observe_messages: bool = False
    observe_subagent_identities: bool = False
    disable_subagents: bool = False
    max_concurrent_subagents: int = 0  # 0 = the harness's own bound
    disable_execution_environment: bool = False
    local_environment: LocalEnvironment | None = None
    require_existing_native_session: bool = False
    agent_session_id: str = ""
    function_tools: list[FunctionTool] = []
    workspace_read_only: bool = False
    mcp_http_servers: list[MCPHTTPServer] | None = None
    # Variables (name -> value) added to the environment of every command the Run
    # starts in its workspace: the session's `environment_variable` vault credentials.
    # The values are secrets: never logged, stored or echoed in an error.
    command_environment: dict[str, str] = {}


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
        if cfg.local_environment is not None and cfg.local_environment.seed is not None:
            seed = cfg.local_environment.seed
            if cfg.local_environment.type != "openai_hosted" or not (
                seed.environment_id and seed.snapshot
            ):
                raise ValidationError(
                    PreparationErrorCode.INVALID_CONFIGURATION,
                    "only a managed workspace is seeded, from a named snapshot",
                )
        if cfg.agent_options.model_provider is not None:
            cfg.agent_options.model_provider.validate()
        sources = cfg.local_environment.capability_sources if cfg.local_environment else None
        if sources is not None:
            try:
                sources.validate()
            except ValidationError as exc:
                raise ValidationError(
                    PreparationErrorCode.INVALID_CONFIGURATION, "capability sources are invalid"
                ) from exc
        harness_config = cfg.agent_options.harness_config
        if (
            harness_config is not None
            and len(msgspec.json.encode(harness_config)) > limits.MAX_HARNESS_CONFIG_BYTES
        ):
            raise ValidationError(
                PreparationErrorCode.INVALID_CONFIGURATION, "harness_config is too large"
            )
        _check_command_environment(cfg.command_environment)
        labels: set[str] = set()
        for server in cfg.mcp_http_servers or []:
            server.validate()
            if server.server_label in labels:
                raise ValidationError(
                    PreparationErrorCode.INVALID_CONFIGURATION, "MCP server labels must be unique"
                )
            labels.add(server.server_label)


_VARIABLE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _check_command_environment(variables: dict[str, str]) -> None:
    """Raises ValidationError(`invalid_configuration`); the text never quotes a value."""
    code = PreparationErrorCode.INVALID_CONFIGURATION
    if len(variables) > limits.MAX_COMMAND_ENVIRONMENT_ENTRIES:
        raise ValidationError(code, "command_environment has too many entries")
    for name, value in variables.items():
        if not _VARIABLE_NAME.match(name):
            raise ValidationError(code, "a command_environment name is not a variable name")
        if not value or any(ch in value for ch in "\x00\r\n"):
            raise ValidationError(code, f"the command_environment value of {name} is unsafe")


class ExecutionStart(msgspec.Struct, **_STRICT):
    """`history`, when present, is the session's committed conversation before this
    input, from which the Executor rebuilds its model context (runtime/proto/history.py);
    absent, the Executor keeps its own memory. `resume` is a cursor the harness gave in a
    `checkpoint` frame: when set, the Run continues from there (the turn's input is then
    context only) instead of starting the turn anew. Only sent to a harness that declares
    `resume`."""

    executor_id: str
    handle: str
    run_id: str
    input: MessageInput
    history: list[HistoryEntry] | None = None
    resume: str = ""

    def validate(self) -> None:
        if not (self.executor_id and self.handle and self.run_id):
            raise ValidationError(PreparationErrorCode.INVALID_START, "start needs ids")
        if len(self.resume.encode()) > limits.MAX_RESUME_CURSOR_BYTES:
            raise ValidationError(PreparationErrorCode.INVALID_START, "resume cursor too large")
        try:
            validate_message_input(self.input)
        except ValidationError as exc:
            raise ValidationError(PreparationErrorCode.INVALID_START, str(exc)) from exc
        if self.history is not None:
            validate_history(self.history)


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


# What an admission request that did not decode is answered with, by type.
_UNDECODABLE_CODES: dict[str, PreparationErrorCode] = {
    "execution_start": PreparationErrorCode.INVALID_START,
    "execution_release": PreparationErrorCode.INVALID_RELEASE,
}


def undecodable_admission_reply(frame_type: str, frame_id: str, field: str) -> PreparationStatus:
    """The `rejected` status answering an admission request whose envelope identifies it
    (`frame_id` is a valid preparation request id) but whose payload did not decode.

    Silence would leave Core waiting for a reply that never comes; a rejection is a
    finite, visible answer (seed 000). A configuration the Runtime cannot accept (an
    `agent_options` key Core never sends, an MCP server without a valid
    `connection_origin`) is `unsupported_configuration`; any other undecodable prepare is
    `invalid_request`. Raises ValidationError when the request cannot be answered: not an
    admission type, or an id that breaks its kind's rule (never echoed back).
    """
    if frame_type == "execution_prepare":
        code = (
            PreparationErrorCode.UNSUPPORTED_CONFIGURATION
            if field.startswith("$.configuration")
            else PreparationErrorCode.INVALID_REQUEST
        )
    elif frame_type in _UNDECODABLE_CODES:
        code = _UNDECODABLE_CODES[frame_type]
    else:
        raise ValidationError(PreparationErrorCode.INVALID_REQUEST, "not an admission request")
    validate_frame_id(frame_type, frame_id)
    return PreparationStatus(
        revision=0, state=PreparationState.REJECTED, operation=frame_type, error_code=code
    )
