"""Client-executed functions: calls keep raw arguments, results need their ids."""

import msgspec
import pytest

from runtime.proto.errors import DecisionErrorCode, ValidationError
from runtime.proto.functions import FunctionCall, FunctionResult
from runtime.proto.inputs import InputImage, InputText


def test_a_result_with_ids_is_valid_and_may_be_empty() -> None:
    FunctionResult("delivery", "call", False, []).validate()
    result = FunctionResult("delivery", "call", True, [InputImage("data:image/png;base64,AA==")])
    result.validate()
    assert result.has_images
    assert not FunctionResult("d", "c", True, [InputText("x")]).has_images


@pytest.mark.parametrize(("delivery", "call"), [("", "call"), ("delivery", "")])
def test_a_result_without_ids_is_an_invalid_result(delivery: str, call: str) -> None:
    with pytest.raises(ValidationError) as caught:
        FunctionResult(delivery, call, True, []).validate()
    assert caught.value.code == DecisionErrorCode.INVALID_RESULT


def test_call_arguments_are_kept_byte_for_byte() -> None:
    raw = b'{"b": 2, "a": [1, 2]}'
    call = msgspec.json.decode(
        b'{"call_id":"c","name":"n","arguments":' + raw + b"}", type=FunctionCall
    )
    assert bytes(call.arguments) == raw
    call.validate()
    with pytest.raises(ValidationError):
        FunctionCall("", "n", msgspec.Raw(b"{}")).validate()
