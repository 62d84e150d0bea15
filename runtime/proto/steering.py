"""Active input receipts: `prompt_steer` (Core -> Runtime) and `prompt_steer_ack`.

The envelope id is the Run ID; `input_id` identifies one active input (1..256 bytes),
distinct from a delivery id. Core sets `durable_receipt: true`, delivers one input at a
time per Run and waits for its receipt before sending the next. Receipt stages:

* `written: true` (accepted false): the native write completed (Runtime budget 10 s,
  Core waits at most 30 s from delivery); native consumption is not confirmed;
* `accepted: true`: the adapter confirms native consumption;
* `error_code` (accepted false, written false): a finite refusal or `outcome_unknown`.

Neither `written` nor a send failure advances Core's input cursor.
"""

from __future__ import annotations

from enum import StrEnum

import msgspec

from runtime.proto.errors import DecodeErrorCode, SteerErrorCode, ValidationError
from runtime.proto.identities import utf8_size
from runtime.proto.inputs import MessageInput, validate_message_input
from runtime.proto.limits import MAX_INPUT_ID_BYTES
from runtime.proto.strictness import LENIENT, STRICT

_STRICT = STRICT
_OUT = LENIENT


def validate_input_id(input_id: str) -> None:
    """Accept a non-blank input id of 1..256 UTF-8 bytes."""
    size = utf8_size(input_id)
    if size is None or not 0 < size <= MAX_INPUT_ID_BYTES or not input_id.strip():
        raise ValidationError(SteerErrorCode.INVALID_INPUT, "input id is invalid")


class PromptSteer(msgspec.Struct, **_STRICT):
    input_id: str
    input: MessageInput
    durable_receipt: bool = False

    def validate(self) -> None:
        """Raises ValidationError(`invalid_input`) for a bad id or message input."""
        validate_input_id(self.input_id)
        try:
            validate_message_input(self.input)
        except ValidationError as exc:
            raise ValidationError(SteerErrorCode.INVALID_INPUT, str(exc)) from exc


class ReceiptStage(StrEnum):
    WRITTEN = "written"
    ACCEPTED = "accepted"
    REFUSED = "refused"
    UNKNOWN = "unknown"


class PromptSteerAck(msgspec.Struct, **_OUT):
    input_id: str
    accepted: bool  # always emitted
    written: bool = False
    error_code: str = ""
    error: str = ""

    def check(self, input_id: str) -> ReceiptStage:
        """Return the stage this receipt proves for `input_id`; raises ValidationError
        (`invalid_receipt`) for another input, a contradictory or an unknown code."""
        if self.input_id != input_id:
            raise ValidationError(DecodeErrorCode.INVALID_RECEIPT, "receipt names another input")
        if self.accepted or self.written:
            if self.error_code:
                raise ValidationError(DecodeErrorCode.INVALID_RECEIPT, "receipt contradicts")
            return ReceiptStage.ACCEPTED if self.accepted else ReceiptStage.WRITTEN
        if self.error_code not in frozenset(SteerErrorCode):
            raise ValidationError(DecodeErrorCode.INVALID_RECEIPT, "receipt code is invalid")
        if self.error_code == SteerErrorCode.OUTCOME_UNKNOWN:
            return ReceiptStage.UNKNOWN
        return ReceiptStage.REFUSED
