"""Every message type round-trips through `encode` and its direction's decoder; Core ->
Runtime payloads are strict at every depth and Runtime -> Core ones follow the declared
policy; unknown types are rejected."""

import types
import typing
from typing import Any

import msgspec
import msgspec.inspect
import pytest

from runtime.proto import (
    capabilities,
    device,
    execution,
    exports,
    functions,
    heartbeat,
    initialization,
    inputs,
    interactions,
    run,
    steering,
    subagents,
    suspension,
    workspace,
    writes,
)
from runtime.proto.codec import (
    CORE_TO_RUNTIME,
    PAYLOAD_LIMITS,
    RUNTIME_TO_CORE,
    decode_from_core,
    decode_from_runtime,
    encode,
    encode_to_send,
    type_of,
    validate_frame,
)
from runtime.proto.device import DeviceShutdown
from runtime.proto.envelope import Envelope
from runtime.proto.errors import (
    DecodeError,
    DecodeErrorCode,
    FrameTooLarge,
    UnknownMessageType,
    ValidationError,
)
from runtime.proto.identities import ID_KINDS, IdKind
from runtime.proto.limits import KIB, MAX_FRAME_BYTES
from runtime.proto.strictness import STRICT_FROM_RUNTIME
from runtime.proto.transfers import TransferOutcome, TransferStep

UUID_A = "0b7c3f52-5a57-4c35-9a53-3a3b8f6e2c11"
UUID_B = "7d1e2a40-8c1b-4f0e-b7c2-52e3a4f1d9aa"
DIGEST = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
HELLO = [inputs.Message([inputs.InputText("hello")])]
CAPS = capabilities.AgentKindCapabilities(
    **{name: False for name in capabilities.CAPABILITY_FIELDS}
)
IDS = {
    IdKind.NONE: "",
    IdKind.PREPARATION: "prepare",
    IdKind.RUN: "run",
    IdKind.INTERACTION: "perm_1",
    IdKind.RECEIPT: "run",
    IdKind.TRANSFER: UUID_A,
    IdKind.MUTATION: UUID_B,
    IdKind.OPERATION: "op-1",
    IdKind.SUSPENSION: "suspend-request-1",
}

CORE_SAMPLES: dict[str, msgspec.Struct] = {
    "execution_prepare": execution.ExecutionPrepare(
        "session",
        execution.ExecutionConfiguration(
            agent_kind="scripted",
            agent_options=execution.AgentOptions(model="scripted"),
            execution_controls=execution.ExecutionControls("disabled", "medium", True),
            disable_execution_environment=True,
        ),
    ),
    "execution_start": execution.ExecutionStart("executor", "handle", "run", HELLO),
    "execution_release": execution.ExecutionRelease("handle"),
    "prompt_cancel": run.PromptCancel("cancel:run"),
    "prompt_pause": run.PromptPause(),
    "runtime_prepare": initialization.RuntimePrepare(
        TransferStep.BEGIN,
        environment_id=UUID_A,
        session_id=UUID_B,
        action="file",
        file=initialization.RuntimeInitialFile("/workspace/data.csv"),
        size_bytes=0,
        sha256=DIGEST,
    ),
    "device_shutdown": device.DeviceShutdown("operator"),
    "permission_decision": interactions.PermissionDecision("delivery-1", True, "ok", {"a": 1}),
    "prompt_for_user_choice_decision": interactions.PromptForUserChoiceDecision(
        "delivery-2", [interactions.QuestionAnswer("q1", ["Blue"])]
    ),
    "prompt_steer": steering.PromptSteer("input-1", HELLO, durable_receipt=True),
    "function_result": functions.FunctionResult(
        "delivery-3", "call-1", True, [inputs.InputText("42")]
    ),
    "workspace_read": workspace.WorkspaceRead("env", "notes", handle="handle", max_bytes=KIB),
    "workspace_write": writes.WorkspaceWrite(TransferStep.CHUNK, offset=0, data=b"\x00\xff"),
    "workspace_export": exports.WorkspaceExport(exports.ExportStep.NEXT, offset=4 * KIB),
    "environment_quiesce": suspension.EnvironmentQuiesce("env", "suspend-1"),
    "environment_resume": suspension.EnvironmentResume("env", "suspend-1", rollback=True),
}

RUNTIME_SAMPLES: dict[str, msgspec.Struct] = {
    "heartbeat": heartbeat.Heartbeat(
        1, 0, [capabilities.SupportedAgentKind("scripted", True, CAPS)], home_removal=True
    ),
    "preparation_status": execution.PreparationStatus(
        2, execution.PreparationState.READY, executor_id="executor", handle="handle"
    ),
    "delta": run.Delta("item", "hel", 1),
    "thinking": run.Thinking("hmm"),
    "output_message": run.OutputMessage("item", "completed", "final_answer", "hello"),
    "tool_call": run.ToolCall("tool-1", "read", "before"),
    "usage": run.Usage(run.TokenCounts(1, 0, 2, 0, 3), "openai", "scripted"),
    "error": run.Error("boom", "server_error"),
    "done": run.Done(metadata={"agent_session_id": "native"}),
    "checkpoint": run.Checkpoint(boundary="between_model_calls", cursor="{}"),
    "runtime_prepare_result": initialization.RuntimePrepareResult(
        TransferOutcome.FAILED, exit_code=3, error_code="runtime_preparation_failed"
    ),
    "permission_request": interactions.PermissionRequest("perm_1", "Bash", "Run ls", "ls -la"),
    "permission_cancel": interactions.PermissionCancel(),
    "prompt_for_user_choice": interactions.PromptForUserChoice(
        "ask_1",
        [interactions.ChoiceQuestion("q1", "Colour?", [interactions.ChoiceOption("Blue")])],
    ),
    "interaction_decision_ack": interactions.InteractionDecisionAck(
        "cancel:run", True, outcome=run.Done()
    ),
    "prompt_steer_ack": steering.PromptSteerAck("input-1", False, written=True),
    "function_call": functions.FunctionCall("call-1", "add", msgspec.Raw(b'{"a":1}')),
    "subagent_identity": subagents.SubagentIdentity(
        "sub-1", "turn-1", "call-1", 1700000000000, name="helper", instructions="look"
    ),
    "subagent_lifecycle": subagents.SubagentLifecycle("sub-1", "active", 1700000000000),
    "subagent_turn": subagents.SubagentTurn("sub-1", "sub-turn-1", "in_progress", 1700000000000),
    "subagent_item": subagents.SubagentItem(
        "sub-1", "sub-turn-1", "sub-item-1", 0, "message", subagents.SubagentMessage("user", "hi")
    ),
    "workspace_read_result": workspace.WorkspaceReadResult(
        workspace.ReadOutcome.COMPLETED, data=b"abc", close_acknowledged=True
    ),
    "workspace_write_result": writes.WorkspaceWriteResult(TransferOutcome.RECEIVED, offset=2),
    "workspace_export_result": exports.WorkspaceExportResult(
        exports.ExportOutcome.CHUNK, 0, data=b"tar"
    ),
    "environment_quiesced": suspension.EnvironmentQuiesced("env", "suspend-1", True),
    "environment_resumed": suspension.EnvironmentResumed(
        "env", "suspend-1", False, "not_suspended"
    ),
}


def _frame(type_: str, payload: Any, id_: str = "id") -> bytes:
    return msgspec.json.encode({"type": type_, "id": id_, "payload": payload})


def _payload_dict(type_: str) -> dict[str, Any]:
    decoded: dict[str, Any] = msgspec.json.decode(msgspec.json.encode(CORE_SAMPLES[type_]))
    return decoded


def _nullable(annotation: Any) -> bool:
    union = typing.get_origin(annotation) in (typing.Union, types.UnionType)
    return union and type(None) in typing.get_args(annotation)


def test_the_samples_cover_both_direction_tables_exactly() -> None:
    assert set(CORE_SAMPLES) == set(CORE_TO_RUNTIME)
    assert set(RUNTIME_SAMPLES) == set(RUNTIME_TO_CORE)
    assert not set(CORE_TO_RUNTIME) & set(RUNTIME_TO_CORE)
    assert len(CORE_TO_RUNTIME) + len(RUNTIME_TO_CORE) == len(ID_KINDS)


@pytest.mark.parametrize("type_", sorted(CORE_SAMPLES))
def test_core_frames_round_trip(type_: str) -> None:
    frame = decode_from_core(encode(CORE_SAMPLES[type_], IDS[ID_KINDS[type_]], "t"))
    assert (frame.type, frame.id, frame.payload, frame.trace) == (
        type_,
        IDS[ID_KINDS[type_]],
        CORE_SAMPLES[type_],
        "t",
    )
    assert isinstance(frame.payload, CORE_TO_RUNTIME[type_])
    validate_frame(frame)
    with pytest.raises(UnknownMessageType):
        decode_from_runtime(encode(CORE_SAMPLES[type_], frame.id))


@pytest.mark.parametrize("type_", sorted(RUNTIME_SAMPLES))
def test_runtime_frames_round_trip(type_: str) -> None:
    frame = decode_from_runtime(encode(RUNTIME_SAMPLES[type_], IDS[ID_KINDS[type_]]))
    assert (frame.type, frame.payload) == (type_, RUNTIME_SAMPLES[type_])
    assert isinstance(frame.payload, RUNTIME_TO_CORE[type_])
    validate_frame(frame)
    with pytest.raises(UnknownMessageType):
        decode_from_core(encode(RUNTIME_SAMPLES[type_], frame.id))


@pytest.mark.parametrize("type_", ["prompt_request", "authoring_request", "", "Delta"])
def test_unknown_types_are_rejected_in_both_directions_and_by_the_encoder(type_: str) -> None:
    for decode in (decode_from_core, decode_from_runtime):
        with pytest.raises(UnknownMessageType) as caught:
            decode(_frame(type_, {}))
        assert caught.value.code == DecodeErrorCode.UNKNOWN_TYPE


class _NotAPayload(msgspec.Struct, frozen=True):
    text: str = ""


@pytest.mark.parametrize("payload", [_NotAPayload(), Envelope(type="delta")])
def test_the_encoder_refuses_a_struct_that_is_no_message_type(payload: msgspec.Struct) -> None:
    with pytest.raises(UnknownMessageType) as caught:
        encode(payload, "id")
    assert caught.value.code == DecodeErrorCode.UNKNOWN_TYPE


@pytest.mark.parametrize("type_", sorted({**CORE_SAMPLES, **RUNTIME_SAMPLES}))
def test_the_encoder_takes_the_type_from_the_payload_class(type_: str) -> None:
    payload = {**CORE_SAMPLES, **RUNTIME_SAMPLES}[type_]
    assert type_of(payload) == type_
    assert msgspec.json.decode(encode(payload, "x"))["type"] == type_


def _structs(annotation: Any) -> list[msgspec.inspect.StructType]:
    """Every Struct reachable from a payload type, the payload's own first."""
    found: dict[type, msgspec.inspect.StructType] = {}

    def walk(info: msgspec.inspect.Type) -> None:
        if isinstance(info, msgspec.inspect.StructType):
            if info.cls not in found:
                found[info.cls] = info
                for field in info.fields:
                    walk(field.type)
        elif isinstance(info, msgspec.inspect.UnionType):
            for member in info.types:
                walk(member)
        elif isinstance(info, msgspec.inspect.TupleType):
            for member in info.item_types:
                walk(member)
        elif isinstance(info, msgspec.inspect.DictType):
            walk(info.value_type)
        elif isinstance(info, msgspec.inspect.CollectionType):
            walk(info.item_type)

    walk(msgspec.inspect.type_info(annotation))
    return list(found.values())


@pytest.mark.parametrize("type_", sorted(CORE_TO_RUNTIME))
def test_everything_core_sends_is_decoded_strictly_at_every_depth(type_: str) -> None:
    lenient = [
        s.cls.__name__ for s in _structs(CORE_TO_RUNTIME[type_]) if not s.forbid_unknown_fields
    ]
    assert lenient == []


@pytest.mark.parametrize("type_", sorted(RUNTIME_TO_CORE))
def test_what_a_runtime_sends_is_lenient_except_the_declared_structures(type_: str) -> None:
    for struct in _structs(RUNTIME_TO_CORE[type_]):
        assert struct.forbid_unknown_fields == (struct.cls.__name__ in STRICT_FROM_RUNTIME)


def test_an_unknown_field_in_a_lenient_report_is_ignored_and_in_a_strict_one_refused() -> None:
    delta: dict[str, Any] = {"item_id": "i", "delta": "a", "sequence": 1}
    decoded = decode_from_runtime(_frame("delta", {**delta, "later_field": 1}, "run_1"))
    assert decoded.payload == run.Delta(**delta)
    with pytest.raises(DecodeError):
        counts = {k: 0 for k in run.TokenCounts.__struct_fields__}
        decode_from_runtime(_frame("usage", {"tokens": {**counts, "later_field": 1}}, "run_1"))


@pytest.mark.parametrize("data", [b"", b"[]", b"{}", b'{"id":"x"}', b"not json", b'{"type":1}'])
def test_a_frame_that_is_not_an_envelope_is_malformed(data: bytes) -> None:
    with pytest.raises(DecodeError) as caught:
        decode_from_core(data)
    assert caught.value.code == DecodeErrorCode.MALFORMED_FRAME


def test_the_frame_limit_is_4_mib() -> None:
    padding = MAX_FRAME_BYTES - len(_frame("device_shutdown", {"reason": ""}))
    at_limit = _frame("device_shutdown", {"reason": "x" * padding})
    assert len(at_limit) == MAX_FRAME_BYTES
    decode_from_core(at_limit)
    with pytest.raises(DecodeError) as caught:
        decode_from_core(_frame("device_shutdown", {"reason": "x" * (padding + 1)}))
    assert caught.value.code == DecodeErrorCode.FRAME_TOO_LARGE


def test_a_frame_past_the_limit_is_never_encoded_to_send() -> None:
    """Either side sends through `encode_to_send`: a frame the peer would refuse (and
    close the connection on) raises instead, naming its type and size."""
    reason = 1 + MAX_FRAME_BYTES - len(encode(DeviceShutdown(reason="x"), ""))
    assert len(encode_to_send(DeviceShutdown(reason="x" * reason), "")) == MAX_FRAME_BYTES
    with pytest.raises(FrameTooLarge) as caught:
        encode_to_send(DeviceShutdown(reason="x" * (reason + 1)), "")
    assert caught.value.code == DecodeErrorCode.FRAME_TOO_LARGE
    assert (caught.value.frame_type, caught.value.size) == ("device_shutdown", MAX_FRAME_BYTES + 1)


SMALLEST_BODIES = {
    "workspace_read": b'{"environment_id":"env","path":""}',
    "workspace_export": b'{"step":"cancel"}',
    "workspace_write": b'{"step":"commit"}',
    "runtime_prepare": b'{"step":"commit"}',
    "workspace_export_result": b'{"outcome":"completed","offset":0}',
}


@pytest.mark.parametrize("type_", sorted(PAYLOAD_LIMITS))
def test_payload_limits_apply_per_type_at_the_boundary(type_: str) -> None:
    decode = decode_from_core if type_ in CORE_TO_RUNTIME else decode_from_runtime
    limit, body = PAYLOAD_LIMITS[type_], SMALLEST_BODIES[type_]

    def padded(size: int) -> bytes:  # whitespace inside the object is part of the payload
        payload = body[:-1] + b" " * (size - len(body)) + b"}"
        return b'{"type":"%s","payload":%s}' % (type_.encode(), payload)

    assert decode(padded(limit)).type == type_
    with pytest.raises(DecodeError) as caught:
        decode(padded(limit + 1))
    assert caught.value.code == DecodeErrorCode.PAYLOAD_TOO_LARGE


@pytest.mark.parametrize("type_", sorted(CORE_SAMPLES))
def test_core_payloads_reject_unknown_fields(type_: str) -> None:
    with pytest.raises(DecodeError) as caught:
        decode_from_core(_frame(type_, {**_payload_dict(type_), "x_extra": 1}))
    assert caught.value.code == DecodeErrorCode.INVALID_PAYLOAD
    assert "x_extra" not in str(caught.value)


@pytest.mark.parametrize("type_", sorted(CORE_SAMPLES))
def test_core_payloads_reject_missing_required_fields(type_: str) -> None:
    for field in msgspec.structs.fields(CORE_TO_RUNTIME[type_]):
        if field.required:
            payload = {k: v for k, v in _payload_dict(type_).items() if k != field.encode_name}
            with pytest.raises(DecodeError):
                decode_from_core(_frame(type_, payload))


@pytest.mark.parametrize("type_", sorted(CORE_SAMPLES))
def test_core_payloads_reject_null_for_non_nullable_fields(type_: str) -> None:
    for field in msgspec.structs.fields(CORE_TO_RUNTIME[type_]):
        if not _nullable(field.type):
            with pytest.raises(DecodeError):
                decode_from_core(_frame(type_, {**_payload_dict(type_), field.encode_name: None}))


@pytest.mark.parametrize(
    ("type_", "payload"),
    [
        (
            "prompt_for_user_choice_decision",
            {
                "delivery_id": "d",
                "question_answers": [{"question_id": "q1", "answers": [], "answer": "legacy"}],
            },
        ),
        (
            "prompt_for_user_choice_decision",
            {"delivery_id": "d", "question_answers": [{"question_id": "q1", "answers": None}]},
        ),
        ("prompt_for_user_choice_decision", {"delivery_id": "d", "answers": ["Blue"]}),
        (
            "prompt_steer",
            {
                "input_id": "i",
                "input": [{"content": [{"type": "input_text", "text": "hi", "image_url": "x"}]}],
            },
        ),
        ("function_result", {"delivery_id": "d", "call_id": "c", "success": True, "content": None}),
        (
            "runtime_prepare",
            {
                "step": "begin",
                "initialization": {"action": "setup", "command": "make", "network": "enabled"},
            },
        ),
        (
            "execution_start",
            {
                "executor_id": "e",
                "handle": "h",
                "run_id": "r",
                "input": [{"content": [{"type": "input_audio", "data": "x"}]}],
            },
        ),
    ],
)
def test_core_payloads_are_strict_at_every_depth(type_: str, payload: dict[str, Any]) -> None:
    with pytest.raises(DecodeError):
        decode_from_core(_frame(type_, payload))


def test_runtime_payloads_tolerate_unknown_fields_but_not_missing_ones() -> None:
    frame = decode_from_runtime(
        _frame("prompt_steer_ack", {"input_id": "i", "accepted": True, "future": 1}, "run")
    )
    assert frame.payload == steering.PromptSteerAck("i", True)
    with pytest.raises(DecodeError):
        decode_from_runtime(_frame("prompt_steer_ack", {"input_id": "i"}, "run"))


def test_bytes_travel_as_padded_standard_base64() -> None:
    encoded = encode(CORE_SAMPLES["workspace_write"], UUID_B)
    assert b'"data":"AP8="' in encoded
    with pytest.raises(DecodeError):
        decode_from_core(_frame("workspace_write", {"step": "chunk", "data": "AP8"}))


def test_validate_frame_checks_the_id_before_the_payload() -> None:
    read = workspace.WorkspaceRead("env", "a", handle="h", max_bytes=1)
    with pytest.raises(ValidationError) as caught:
        validate_frame(decode_from_core(encode(read, "x" * 129)))
    assert caught.value.code == DecodeErrorCode.INVALID_CORRELATION
    bad = msgspec.structs.replace(read, max_bytes=0)
    with pytest.raises(ValidationError) as caught:
        validate_frame(decode_from_core(encode(bad, "op-1")))
    assert caught.value.code == "invalid_request"
