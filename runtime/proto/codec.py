"""One typed decoder per direction, and the encoder.

`decode_from_core` is what the Runtime uses on frames it receives; `decode_from_runtime`
is what Core uses. Both decode the envelope, look the type up in that direction's table,
check the type's raw payload limit (PAYLOAD_LIMITS) and decode the payload into its
Struct: strictly (unknown fields rejected at any depth) for everything Core sends.
Failures raise a ProtocolError with a finite code and a message that never echoes the
frame.

Decoding checks shape only. `validate_frame` then applies the seed's rules that need no
context: the envelope id of the type's kind and the payload's own `validate()`. Rules
that need the request (receipts, offsets) are the payloads' `check(...)` methods.
"""

from __future__ import annotations

import re
from typing import Any, NamedTuple

import msgspec

from runtime.proto import (
    device,
    execution,
    exports,
    functions,
    initialization,
    interactions,
    run,
    steering,
    subagents,
    suspension,
    workspace,
    writes,
)
from runtime.proto.envelope import Envelope
from runtime.proto.errors import DecodeError, DecodeErrorCode, FrameTooLarge, UnknownMessageType
from runtime.proto.heartbeat import Heartbeat
from runtime.proto.identities import validate_frame_id
from runtime.proto.limits import (
    MAX_EXPORT_FRAME_BYTES,
    MAX_FRAME_BYTES,
    MAX_REQUEST_PAYLOAD_BYTES,
    MAX_RUNTIME_PREPARE_FRAME_BYTES,
    MAX_WRITE_FRAME_BYTES,
)

CORE_TO_RUNTIME: dict[str, type[msgspec.Struct]] = {
    "execution_prepare": execution.ExecutionPrepare,
    "execution_start": execution.ExecutionStart,
    "execution_release": execution.ExecutionRelease,
    "prompt_cancel": run.PromptCancel,
    "prompt_pause": run.PromptPause,
    "runtime_prepare": initialization.RuntimePrepare,
    "device_shutdown": device.DeviceShutdown,
    "permission_decision": interactions.PermissionDecision,
    "prompt_for_user_choice_decision": interactions.PromptForUserChoiceDecision,
    "prompt_steer": steering.PromptSteer,
    "function_result": functions.FunctionResult,
    "workspace_read": workspace.WorkspaceRead,
    "workspace_write": writes.WorkspaceWrite,
    "workspace_export": exports.WorkspaceExport,
    "environment_quiesce": suspension.EnvironmentQuiesce,
    "environment_resume": suspension.EnvironmentResume,
}

RUNTIME_TO_CORE: dict[str, type[msgspec.Struct]] = {
    "heartbeat": Heartbeat,
    "preparation_status": execution.PreparationStatus,
    "delta": run.Delta,
    "thinking": run.Thinking,
    "output_message": run.OutputMessage,
    "tool_call": run.ToolCall,
    "usage": run.Usage,
    "error": run.Error,
    "done": run.Done,
    "checkpoint": run.Checkpoint,
    "runtime_prepare_result": initialization.RuntimePrepareResult,
    "permission_request": interactions.PermissionRequest,
    "permission_cancel": interactions.PermissionCancel,
    "prompt_for_user_choice": interactions.PromptForUserChoice,
    "interaction_decision_ack": interactions.InteractionDecisionAck,
    "prompt_steer_ack": steering.PromptSteerAck,
    "function_call": functions.FunctionCall,
    "workspace_read_result": workspace.WorkspaceReadResult,
    "workspace_write_result": writes.WorkspaceWriteResult,
    "workspace_export_result": exports.WorkspaceExportResult,
    "environment_quiesced": suspension.EnvironmentQuiesced,
    "environment_resumed": suspension.EnvironmentResumed,
    **subagents.SUBAGENT_FRAMES,
}

# The type each payload class travels as: the inverse of both tables, so `encode` never
# takes a type that could disagree with its payload.
MESSAGE_TYPES: dict[type[msgspec.Struct], str] = {
    cls: type_ for table in (CORE_TO_RUNTIME, RUNTIME_TO_CORE) for type_, cls in table.items()
}
assert len(MESSAGE_TYPES) == len(CORE_TO_RUNTIME) + len(RUNTIME_TO_CORE), "a class per type"

# Raw payload limits checked before a payload is decoded (private transport limits).
PAYLOAD_LIMITS: dict[str, int] = {
    "workspace_read": MAX_REQUEST_PAYLOAD_BYTES,
    "workspace_export": MAX_REQUEST_PAYLOAD_BYTES,
    "workspace_write": MAX_WRITE_FRAME_BYTES,
    "runtime_prepare": MAX_RUNTIME_PREPARE_FRAME_BYTES,
    "workspace_export_result": MAX_EXPORT_FRAME_BYTES,
}

# Frames whose envelope id is a Run ID (Runtime -> Core).
RUN_EVENT_TYPES = frozenset(
    {
        "delta",
        "thinking",
        "output_message",
        "tool_call",
        "usage",
        "error",
        "checkpoint",
        "done",
        *subagents.SUBAGENT_FRAMES,
    }
)


class Frame(NamedTuple):
    type: str
    id: str
    payload: Any
    trace: str


_envelope_decoder = msgspec.json.Decoder(Envelope)
_encoder = msgspec.json.Encoder()
# Each payload type's decoder is built when a frame of that type first arrives: building
# all of them compiles every payload Struct's type information at import, which a start
# (that decodes a handful of types before it is ready) pays for without using.
_payload_decoders: dict[type[msgspec.Struct], msgspec.json.Decoder[Any]] = {}


def _payload_decoder(cls: type[msgspec.Struct]) -> msgspec.json.Decoder[Any]:
    decoder = _payload_decoders.get(cls)
    if decoder is None:
        decoder = _payload_decoders[cls] = msgspec.json.Decoder(cls)
    return decoder


_AT = re.compile(r" - at `(\$[^`]*)`$")
_NAMED = re.compile(r"^Object (?:missing required|contains unknown) field `([^`]*)`")


def field_path(message: str) -> str:
    """The JSON path of the first invalid field named by a msgspec decode error, e.g.
    `$.configuration.agent_options.extra` or `$.home_removal`. Only the path is kept:
    msgspec may quote a value elsewhere in its message, and a value is never logged."""
    at = _AT.search(message)
    path = at.group(1) if at else "$"
    named = _NAMED.match(message)
    if named:
        path = f"{path}.{named.group(1)}"
    return path


def _decode(data: bytes | str, table: dict[str, type[msgspec.Struct]]) -> Frame:
    raw = data.encode() if isinstance(data, str) else data
    if len(raw) > MAX_FRAME_BYTES:
        raise DecodeError(DecodeErrorCode.FRAME_TOO_LARGE, "frame exceeds the frame limit")
    try:
        envelope = _envelope_decoder.decode(raw)
    except msgspec.DecodeError as exc:
        raise DecodeError(DecodeErrorCode.MALFORMED_FRAME, "frame is not an envelope") from exc
    cls = table.get(envelope.type)
    if cls is None:
        raise UnknownMessageType(DecodeErrorCode.UNKNOWN_TYPE, "message type is not accepted")
    body = bytes(envelope.payload) or b"{}"
    if len(body) > PAYLOAD_LIMITS.get(envelope.type, MAX_FRAME_BYTES):
        raise DecodeError(DecodeErrorCode.PAYLOAD_TOO_LARGE, "payload exceeds its type's limit")
    try:
        payload = _payload_decoder(cls).decode(body)
    except msgspec.DecodeError as exc:
        code = (
            DecodeErrorCode.INVALID_CAPABILITIES
            if envelope.type == "heartbeat"
            else DecodeErrorCode.INVALID_PAYLOAD
        )
        raise DecodeError(
            code,
            f"payload of {envelope.type} is invalid",
            frame_type=envelope.type,
            frame_id=envelope.id,
            field=field_path(str(exc)),
        ) from exc
    return Frame(envelope.type, envelope.id, payload, envelope.trace)


def decode_from_core(data: bytes | str) -> Frame:
    """Decode a frame that Core sent (the Runtime's receive side)."""
    return _decode(data, CORE_TO_RUNTIME)


def decode_from_runtime(data: bytes | str) -> Frame:
    """Decode a frame that a Runtime sent (Core's receive side)."""
    return _decode(data, RUNTIME_TO_CORE)


def type_of(payload: msgspec.Struct) -> str:
    """The message type a payload travels as; each payload class names exactly one type.

    Raises UnknownMessageType for a Struct that is not a payload of either direction."""
    type_ = MESSAGE_TYPES.get(type(payload))
    if type_ is None:
        raise UnknownMessageType(DecodeErrorCode.UNKNOWN_TYPE, "payload is not a message type")
    return type_


def encode(payload: msgspec.Struct, id_: str, trace: str = "") -> bytes:
    """Encode one envelope; its type is the one the payload's class travels as."""
    body = msgspec.Raw(_encoder.encode(payload))
    return _encoder.encode(Envelope(type=type_of(payload), id=id_, payload=body, trace=trace))


def encode_to_send(payload: msgspec.Struct, id_: str, trace: str = "") -> bytes:
    """`encode`, for a frame about to be sent: raises FrameTooLarge (nothing is sent)
    when the encoding is larger than the peer reads. Both sides send through this, so a
    frame the peer would refuse, closing the connection and every operation on it,
    fails only the operation that made it."""
    data = encode(payload, id_, trace)
    if len(data) > MAX_FRAME_BYTES:
        raise FrameTooLarge(type_of(payload), len(data), MAX_FRAME_BYTES)
    return data


def validate_frame(frame: Frame) -> None:
    """Apply the context-free rules of a decoded frame: the envelope id of the type's
    kind, then the payload's `validate()` where it has one.

    Raises ValidationError with a finite code: `invalid_correlation` for the id (never
    echo such an id back), otherwise the family's code (e.g. `invalid_request`).
    """
    validate_frame_id(frame.type, frame.id)
    validate = getattr(frame.payload, "validate", None)
    if callable(validate):
        validate()
