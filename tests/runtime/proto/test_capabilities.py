"""Capability declarations: every field explicit, strictly decoded, never inferred."""

from typing import Any

import msgspec
import pytest

from runtime.proto.capabilities import (
    ALWAYS_REQUIRED,
    CAPABILITY_FIELDS,
    AgentKindCapabilities,
    SupportedAgentKind,
    decode_capabilities,
    missing_capabilities,
)
from runtime.proto.codec import decode_from_runtime, encode
from runtime.proto.errors import DecodeError, DecodeErrorCode
from runtime.proto.heartbeat import Heartbeat

# Listed one by one on purpose: a new field must be added here by hand, with a decision.
FIELDS = [
    "subagent_observations",
    "streaming",
    "permissions",
    "usage",
    "resume",
    "native_session_recovery",
    "steering",
    "message_items",
    "tool_observations",
    "environment_none",
    "local_environment",
    "preparation",
    "workspace_read_preparation",
    "workspace_output_export",
    "programmatic_tool_calling_disable",
    "web_search_control",
    "execution_controls",
    "text_verbosity",
    "structured_output",
    "tool_search",
    "message_images",
    "function_result_images",
    "subagent_control",
    "durable_input_receipts",
    "durable_turns",
    "function_tools",
    "mcp_http_tools",
    "mcp_http_required",
    "mcp_http_bearer_auth",
]

DECLARATION: dict[str, bool] = {
    "subagent_observations": True,
    "streaming": True,
    "permissions": False,
    "usage": True,
    "resume": False,
    "native_session_recovery": True,
    "steering": True,
    "message_items": False,
    "tool_observations": True,
    "environment_none": True,
    "local_environment": False,
    "preparation": True,
    "workspace_read_preparation": False,
    "workspace_output_export": False,
    "programmatic_tool_calling_disable": True,
    "web_search_control": False,
    "execution_controls": True,
    "text_verbosity": True,
    "structured_output": False,
    "tool_search": False,
    "message_images": True,
    "function_result_images": False,
    "subagent_control": True,
    "durable_input_receipts": True,
    "durable_turns": True,
    "function_tools": True,
    "mcp_http_tools": False,
    "mcp_http_required": False,
    "mcp_http_bearer_auth": False,
}

BAD_VALUES = [
    pytest.param(None, id="null"),
    pytest.param(0, id="zero"),
    pytest.param("true", id="str"),
]


def _heartbeat(capabilities: Any) -> bytes:
    kind = {"kind": "scripted", "available": True, "capabilities": capabilities}
    payload = {"ts": 1, "active_requests": 0, "home_removal": False}
    payload["supported_agent_kinds"] = [kind]
    return msgspec.json.encode({"type": "heartbeat", "payload": payload})


def test_the_declaration_has_exactly_the_29_listed_fields() -> None:
    assert list(CAPABILITY_FIELDS) == FIELDS
    assert len(FIELDS) == 29
    assert list(DECLARATION) == FIELDS


def test_a_complete_declaration_round_trips_with_every_field_present() -> None:
    declared = AgentKindCapabilities(**DECLARATION)
    encoded = msgspec.json.encode(declared)
    assert msgspec.json.decode(encoded) == DECLARATION
    assert decode_capabilities(encoded) == declared


@pytest.mark.parametrize("field", FIELDS)
def test_an_omitted_field_is_rejected(field: str) -> None:
    partial = {name: value for name, value in DECLARATION.items() if name != field}
    with pytest.raises(DecodeError) as caught:
        decode_capabilities(msgspec.json.encode(partial))
    assert caught.value.code == DecodeErrorCode.INVALID_CAPABILITIES
    assert field not in str(caught.value)


@pytest.mark.parametrize("value", BAD_VALUES)
@pytest.mark.parametrize("field", FIELDS)
def test_a_null_or_non_boolean_field_is_rejected(field: str, value: object) -> None:
    with pytest.raises(DecodeError) as caught:
        decode_capabilities(msgspec.json.encode({**DECLARATION, field: value}))
    assert caught.value.code == DecodeErrorCode.INVALID_CAPABILITIES


@pytest.mark.parametrize("field", FIELDS)
def test_a_heartbeat_with_a_bad_field_is_invalid(field: str) -> None:
    with pytest.raises(DecodeError) as caught:
        decode_from_runtime(_heartbeat({**DECLARATION, field: None}))
    assert caught.value.code == DecodeErrorCode.INVALID_CAPABILITIES


@pytest.mark.parametrize("field", FIELDS)
def test_an_incomplete_declaration_cannot_be_constructed(field: str) -> None:
    partial = {name: value for name, value in DECLARATION.items() if name != field}
    with pytest.raises(TypeError):
        AgentKindCapabilities(**partial)


def test_an_unknown_field_is_rejected_without_echoing_it() -> None:
    with pytest.raises(DecodeError) as caught:
        decode_capabilities(msgspec.json.encode({**DECLARATION, "teleport": True}))
    assert "teleport" not in str(caught.value)


@pytest.mark.parametrize("capabilities", [None, "absent"])
def test_a_missing_capability_object_is_rejected(capabilities: object) -> None:
    kind: dict[str, Any] = {"kind": "scripted", "available": False}
    if capabilities != "absent":
        kind["capabilities"] = capabilities
    with pytest.raises(msgspec.ValidationError):
        msgspec.json.decode(msgspec.json.encode(kind), type=SupportedAgentKind)


def test_a_heartbeat_round_trips_its_declaration() -> None:
    kind = SupportedAgentKind("scripted", True, AgentKindCapabilities(**DECLARATION), "1.0")
    heartbeat = Heartbeat(ts=1, active_requests=0, home_removal=False, supported_agent_kinds=[kind])
    frame = decode_from_runtime(encode(heartbeat, ""))
    assert frame.payload == heartbeat


def test_missing_capabilities_lists_unsupported_required_names_in_order() -> None:
    declared = AgentKindCapabilities(**{**DECLARATION, "steering": False, "preparation": False})
    assert missing_capabilities(declared, ALWAYS_REQUIRED) == ["steering", "preparation"]
    assert missing_capabilities(AgentKindCapabilities(**DECLARATION), ALWAYS_REQUIRED) == []
