"""Client-executed functions: `function_call` (Runtime -> Core) and `function_result`.

Both envelopes carry the Run ID. `call_id` identifies the native function call and is
not interchangeable with a delivery id: each delivery of a result carries a fresh
`delivery_id`, and the Runtime acknowledges it with `interaction_decision_ack` on the
Run ID. A replay of an applied result with the same content is acknowledged as
applied; different content for the same call is `decision_conflict`.
"""

from __future__ import annotations

import msgspec

from runtime.proto.errors import DecisionErrorCode, DecodeErrorCode, ValidationError
from runtime.proto.inputs import InputContent, InputImage
from runtime.proto.strictness import LENIENT, STRICT

_STRICT = STRICT
_OUT = LENIENT


class FunctionCall(msgspec.Struct, **_OUT):
    call_id: str
    name: str
    arguments: msgspec.Raw  # the native arguments, raw JSON, kept byte for byte

    def validate(self) -> None:
        if not (self.call_id and self.name):
            raise ValidationError(DecodeErrorCode.INVALID_PAYLOAD, "function call needs ids")


class FunctionResult(msgspec.Struct, **_STRICT):
    delivery_id: str
    call_id: str
    success: bool
    content: list[InputContent]  # required and non-null; may be empty

    def validate(self) -> None:
        """Raises ValidationError(`invalid_result`) without a delivery or call id."""
        if not (self.delivery_id and self.call_id):
            raise ValidationError(DecisionErrorCode.INVALID_RESULT, "result needs its ids")

    @property
    def has_images(self) -> bool:
        """True when the result needs the `function_result_images` capability."""
        return any(isinstance(part, InputImage) for part in self.content)
