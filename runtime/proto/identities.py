"""Envelope identities: what each message type's `id` means, and the rules it must meet.

An `id` is never interchangeable with another kind: a Run ID is not a preparation
request ID, a delivery ID is not an input ID, and a trace ID is never a request ID.
`validate_frame_id` checks the rule of the type's kind before admission; a failure
raises ValidationError with code `invalid_correlation`, and the caller must not echo an
overlong ID back to the peer.
"""

from __future__ import annotations

import uuid
from enum import StrEnum

from runtime.proto.errors import DecodeErrorCode, ValidationError
from runtime.proto.limits import MAX_CORRELATION_ID_BYTES, MAX_REQUEST_PAYLOAD_BYTES


class IdKind(StrEnum):
    NONE = "none"  # no correlation (heartbeat, device_shutdown); any id is ignored
    PREPARATION = "preparation"  # preparation request id, never a Run ID
    RUN = "run"  # one execution attempt
    INTERACTION = "interaction"  # permission request_id or user-choice ask_id
    RECEIPT = "receipt"  # id of the acknowledged request: Run ID or interaction ID
    TRANSFER = "transfer"  # connection-local transfer, canonical UUID
    MUTATION = "mutation"  # durable Core mutation id, canonical UUID
    OPERATION = "operation"  # workspace read/export operation, 1..128 bytes
    SUSPENSION = "suspension"  # quiesce/resume request, 1..128 bytes


ID_KINDS: dict[str, IdKind] = {
    "heartbeat": IdKind.NONE,
    "device_shutdown": IdKind.NONE,
    "execution_prepare": IdKind.PREPARATION,
    "execution_start": IdKind.PREPARATION,
    "execution_release": IdKind.PREPARATION,
    "preparation_status": IdKind.PREPARATION,
    "prompt_cancel": IdKind.RUN,
    "prompt_pause": IdKind.RUN,
    "checkpoint": IdKind.RUN,
    "prompt_steer": IdKind.RUN,
    "prompt_steer_ack": IdKind.RUN,
    "function_call": IdKind.RUN,
    "function_result": IdKind.RUN,
    "delta": IdKind.RUN,
    "thinking": IdKind.RUN,
    "output_message": IdKind.RUN,
    "tool_call": IdKind.RUN,
    "usage": IdKind.RUN,
    "error": IdKind.RUN,
    "done": IdKind.RUN,
    "subagent_identity": IdKind.RUN,
    "subagent_lifecycle": IdKind.RUN,
    "subagent_turn": IdKind.RUN,
    "subagent_item": IdKind.RUN,
    "permission_request": IdKind.RUN,
    "prompt_for_user_choice": IdKind.RUN,
    "permission_cancel": IdKind.INTERACTION,
    "permission_decision": IdKind.INTERACTION,
    "prompt_for_user_choice_decision": IdKind.INTERACTION,
    "interaction_decision_ack": IdKind.RECEIPT,
    "runtime_prepare": IdKind.TRANSFER,
    "runtime_prepare_result": IdKind.TRANSFER,
    "workspace_write": IdKind.MUTATION,
    "workspace_write_result": IdKind.MUTATION,
    "workspace_read": IdKind.OPERATION,
    "workspace_read_result": IdKind.OPERATION,
    "workspace_export": IdKind.OPERATION,
    "workspace_export_result": IdKind.OPERATION,
    "environment_quiesce": IdKind.SUSPENSION,
    "environment_resume": IdKind.SUSPENSION,
    "environment_quiesced": IdKind.SUSPENSION,
    "environment_resumed": IdKind.SUSPENSION,
}

# Every type whose envelope id is a Run ID, in either direction.
RUN_ID_TYPES = frozenset(name for name, kind in ID_KINDS.items() if kind is IdKind.RUN)


def utf8_size(text: str) -> int | None:
    """Return the UTF-8 length of `text`, or None if it is not encodable (lone surrogate)."""
    try:
        return len(text.encode("utf-8"))
    except UnicodeEncodeError:
        return None


def is_canonical_uuid(value: str) -> bool:
    """True for a lowercase, hyphenated, non-nil UUID exactly as it would be printed."""
    try:
        parsed = uuid.UUID(value)
    except ValueError:
        return False
    return parsed.int != 0 and str(parsed) == value


def validate_correlation_id(id_: str, limit: int = MAX_CORRELATION_ID_BYTES) -> None:
    """Accept a non-blank id of at most `limit` UTF-8 bytes (128 by default)."""
    size = utf8_size(id_)
    if size is None or size == 0 or size > limit or not id_.strip():
        raise ValidationError(DecodeErrorCode.INVALID_CORRELATION, "correlation id is invalid")


def validate_request_payload(size: int, limit: int = MAX_REQUEST_PAYLOAD_BYTES) -> None:
    """Accept a raw request payload of at most `limit` bytes (8 KiB by default)."""
    if size > limit:
        raise ValidationError(DecodeErrorCode.PAYLOAD_TOO_LARGE, "request payload is too large")


def validate_frame_id(type_: str, id_: str) -> None:
    """Check the envelope id against the rule of the type's id kind.

    UUID kinds need a canonical UUID; operation and suspension ids need 1..128 bytes;
    every other correlated kind needs a non-empty id. A type without a kind is rejected.
    """
    kind = ID_KINDS.get(type_)
    if kind is None:
        raise ValidationError(DecodeErrorCode.UNKNOWN_TYPE, "message type is not defined")
    if kind is IdKind.NONE:
        return
    if kind in (IdKind.TRANSFER, IdKind.MUTATION):
        if not is_canonical_uuid(id_):
            raise ValidationError(DecodeErrorCode.INVALID_CORRELATION, "id must be a UUID")
    elif kind in (IdKind.OPERATION, IdKind.SUSPENSION):
        validate_correlation_id(id_)
    elif not id_:
        raise ValidationError(DecodeErrorCode.INVALID_CORRELATION, "id is required")
