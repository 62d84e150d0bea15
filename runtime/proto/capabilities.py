"""Capability declarations: what one Runtime + Harness combination can do.

Every field is an explicit JSON boolean. Constructing a declaration needs every field
(there are no defaults, so an incomplete declaration cannot be encoded), and decoding
rejects omitted, null, non-boolean and unknown fields. Adding a field is a decision
every declaration in the code base must make explicitly.
"""

from __future__ import annotations

import msgspec

from runtime.proto.errors import DecodeError, DecodeErrorCode


class AgentKindCapabilities(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    subagent_observations: bool
    streaming: bool
    permissions: bool
    usage: bool
    resume: bool
    native_session_recovery: bool
    steering: bool
    message_items: bool
    tool_observations: bool
    environment_none: bool
    local_environment: bool
    preparation: bool
    workspace_read_preparation: bool
    workspace_output_export: bool
    programmatic_tool_calling_disable: bool
    web_search_control: bool
    execution_controls: bool
    text_verbosity: bool
    structured_output: bool
    tool_search: bool
    message_images: bool
    function_result_images: bool
    subagent_control: bool
    durable_input_receipts: bool
    durable_turns: bool
    function_tools: bool
    mcp_http_tools: bool
    mcp_http_required: bool
    mcp_http_bearer_auth: bool


CAPABILITY_FIELDS: tuple[str, ...] = AgentKindCapabilities.__struct_fields__

# Required for every execution on an available Harness (seed 000, admission table).
ALWAYS_REQUIRED: tuple[str, ...] = (
    "streaming",
    "steering",
    "durable_turns",
    "durable_input_receipts",
    "preparation",
    "execution_controls",
    "tool_observations",
)


class SupportedAgentKind(
    msgspec.Struct, frozen=True, forbid_unknown_fields=True, omit_defaults=True
):
    kind: str
    available: bool
    capabilities: AgentKindCapabilities
    version: str = ""


_capabilities_decoder = msgspec.json.Decoder(AgentKindCapabilities)


def decode_capabilities(data: bytes) -> AgentKindCapabilities:
    """Decode one capability object strictly; the error never echoes a field name."""
    try:
        return _capabilities_decoder.decode(data)
    except msgspec.DecodeError as exc:
        raise DecodeError(
            DecodeErrorCode.INVALID_CAPABILITIES, "capability declaration is incomplete or invalid"
        ) from exc


def missing_capabilities(
    declared: AgentKindCapabilities, required: tuple[str, ...] | list[str]
) -> list[str]:
    """Return the required capability names the declaration does not support, in order."""
    return [name for name in required if not getattr(declared, name)]
