"""A payload that does not decode: the error names the request and the first invalid
field (a JSON path, never a value), and an identifiable admission request gets a
`rejected` status instead of silence."""

import json

import pytest

from runtime.proto.codec import decode_from_core, decode_from_runtime, field_path
from runtime.proto.errors import DecodeError, ValidationError
from runtime.proto.execution import PreparationState, undecodable_admission_reply

CONFIGURATION = {
    "agent_kind": "contract",
    "agent_options": {"model": "m"},
    "execution_controls": {
        "web_search": "disabled",
        "text_verbosity": "medium",
        "disable_programmatic_tool_calling": True,
    },
    "disable_execution_environment": True,
}


def _prepare(id_: str, **configuration: object) -> str:
    cfg = {**CONFIGURATION, **configuration}
    return json.dumps(
        {
            "type": "execution_prepare",
            "id": id_,
            "payload": {"session_id": "s", "configuration": cfg},
        }
    )


def test_field_path_keeps_the_path_and_drops_values() -> None:
    assert field_path("Object missing required field `home_removal`") == "$.home_removal"
    assert field_path("Expected `int`, got `str` - at `$.ts`") == "$.ts"
    assert field_path("Object contains unknown field `x` - at `$.a`") == "$.a.x"
    assert field_path("Invalid enum value 'secret' - at `$.a[0].b`") == "$.a[0].b"
    assert field_path("something else") == "$"


@pytest.mark.parametrize(
    ("configuration", "field"),
    [
        ({"agent_options": {"model": "m", "temperature": 1}}, "agent_options.temperature"),
        (
            {
                "mcp_http_servers": [
                    {"server_label": "t", "server_url": "http://h/", "allowed_tools": None}
                ]
            },
            "mcp_http_servers[0].connection_origin",
        ),
        (
            {
                "mcp_http_servers": [
                    {
                        "connection_origin": "nowhere",
                        "server_label": "t",
                        "server_url": "http://h/",
                        "allowed_tools": None,
                    }
                ]
            },
            "mcp_http_servers[0].connection_origin",
        ),
    ],
)
def test_an_unsupported_configuration_is_rejected(
    configuration: dict[str, object], field: str
) -> None:
    with pytest.raises(DecodeError) as raised:
        decode_from_core(_prepare("p", **configuration))
    error = raised.value
    assert (error.frame_type, error.frame_id, error.field) == (
        "execution_prepare",
        "p",
        f"$.configuration.{field}",
    )
    assert "nowhere" not in str(error)
    status = undecodable_admission_reply(error.frame_type, error.frame_id, error.field)
    assert status.state is PreparationState.REJECTED
    assert (status.revision, status.operation, status.error_code) == (
        0,
        "execution_prepare",
        "unsupported_configuration",
    )


def test_other_admission_requests_get_their_family_code() -> None:
    cases = [
        ("execution_prepare", "$.session_id", "invalid_request"),
        ("execution_start", "$.run_id", "invalid_start"),
        ("execution_release", "$.handle", "invalid_release"),
    ]
    for type_, field, code in cases:
        status = undecodable_admission_reply(type_, "p", field)
        assert (status.operation, status.error_code) == (type_, code)


def test_an_unidentifiable_or_other_request_gets_no_reply() -> None:
    with pytest.raises(ValidationError):
        undecodable_admission_reply("execution_prepare", "", "$.configuration")
    with pytest.raises(ValidationError):
        undecodable_admission_reply("prompt_cancel", "run", "$.delivery_id")


def test_an_invalid_heartbeat_names_its_first_invalid_field() -> None:
    with pytest.raises(DecodeError) as raised:
        decode_from_runtime(json.dumps({"type": "heartbeat", "payload": {"ts": "x"}}))
    assert raised.value.field == "$.ts"
