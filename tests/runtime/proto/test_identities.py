"""Envelope identities: correlation ids, canonical UUIDs and per-kind id rules."""

import pytest

from runtime.proto.codec import CORE_TO_RUNTIME, RUNTIME_TO_CORE
from runtime.proto.errors import DecodeErrorCode, ValidationError
from runtime.proto.identities import (
    ID_KINDS,
    RUN_ID_TYPES,
    IdKind,
    is_canonical_uuid,
    validate_correlation_id,
    validate_frame_id,
    validate_request_payload,
)
from runtime.proto.limits import MAX_CORRELATION_ID_BYTES, MAX_REQUEST_PAYLOAD_BYTES

UUID = "0b7c3f52-5a57-4c35-9a53-3a3b8f6e2c11"


def test_every_message_type_has_an_id_kind() -> None:
    assert set(ID_KINDS) == set(CORE_TO_RUNTIME) | set(RUNTIME_TO_CORE)


def test_run_id_types_include_interaction_requests_but_not_their_decisions() -> None:
    assert {"permission_request", "prompt_for_user_choice", "function_call"} <= RUN_ID_TYPES
    assert {"function_result", "prompt_steer", "prompt_steer_ack", "done"} <= RUN_ID_TYPES
    assert not {"permission_decision", "permission_cancel", "execution_start"} & RUN_ID_TYPES


@pytest.mark.parametrize("id_", ["a", "x" * MAX_CORRELATION_ID_BYTES, "é" * 64, "op 1"])
def test_correlation_ids_up_to_128_bytes_are_accepted(id_: str) -> None:
    validate_correlation_id(id_)


@pytest.mark.parametrize(
    "id_", ["", "   ", "x" * (MAX_CORRELATION_ID_BYTES + 1), "é" * 64 + "x", "\ud800"]
)
def test_blank_overlong_or_unencodable_correlation_ids_are_rejected(id_: str) -> None:
    with pytest.raises(ValidationError) as caught:
        validate_correlation_id(id_)
    assert caught.value.code == DecodeErrorCode.INVALID_CORRELATION
    assert id_.strip() == "" or id_ not in str(caught.value)


def test_request_payloads_are_limited_to_8_kib() -> None:
    validate_request_payload(MAX_REQUEST_PAYLOAD_BYTES)
    with pytest.raises(ValidationError) as caught:
        validate_request_payload(MAX_REQUEST_PAYLOAD_BYTES + 1)
    assert caught.value.code == DecodeErrorCode.PAYLOAD_TOO_LARGE


@pytest.mark.parametrize(
    ("value", "canonical"),
    [
        (UUID, True),
        (UUID.upper(), False),
        ("{" + UUID + "}", False),
        (UUID.replace("-", ""), False),
        ("00000000-0000-0000-0000-000000000000", False),
        ("urn:uuid:" + UUID, False),
        ("", False),
    ],
)
def test_canonical_uuids(value: str, canonical: bool) -> None:
    assert is_canonical_uuid(value) is canonical


@pytest.mark.parametrize(
    ("type_", "id_", "valid"),
    [
        ("runtime_prepare", UUID, True),
        ("runtime_prepare", "transfer-1", False),
        ("workspace_write_result", UUID.upper(), False),
        ("workspace_read", "x" * 128, True),
        ("workspace_read", "x" * 129, False),
        ("workspace_export_result", "", False),
        ("environment_quiesce", "x" * 129, False),
        ("prompt_steer", "run", True),
        ("prompt_steer", "", False),
        ("permission_decision", "", False),
        ("heartbeat", "", True),
        ("device_shutdown", "", True),
    ],
)
def test_frame_ids_follow_their_kind(type_: str, id_: str, valid: bool) -> None:
    if valid:
        validate_frame_id(type_, id_)
    else:
        with pytest.raises(ValidationError) as caught:
            validate_frame_id(type_, id_)
        assert caught.value.code == DecodeErrorCode.INVALID_CORRELATION


def test_a_type_without_a_kind_is_rejected() -> None:
    with pytest.raises(ValidationError) as caught:
        validate_frame_id("prompt_request", "run")
    assert caught.value.code == DecodeErrorCode.UNKNOWN_TYPE


def test_acknowledgements_of_decisions_use_the_receipt_kind() -> None:
    assert ID_KINDS["interaction_decision_ack"] is IdKind.RECEIPT
    assert ID_KINDS["permission_cancel"] is IdKind.INTERACTION
