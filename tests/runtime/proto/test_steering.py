"""Active input: `prompt_steer` validation and the stages a `prompt_steer_ack` proves."""

import pytest

from runtime.proto.errors import SteerErrorCode, ValidationError
from runtime.proto.inputs import InputImage, InputText, Message
from runtime.proto.limits import MAX_INPUT_ID_BYTES
from runtime.proto.steering import PromptSteer, PromptSteerAck, ReceiptStage

HELLO = [Message([InputText("hello")])]


@pytest.mark.parametrize("input_id", ["i", "x" * MAX_INPUT_ID_BYTES, "é" * 128])
def test_valid_steers(input_id: str) -> None:
    PromptSteer(input_id, HELLO, durable_receipt=True).validate()
    PromptSteer(input_id, [Message([InputImage("data:image/png;base64,AA==")])]).validate()


@pytest.mark.parametrize(
    ("input_id", "input_"),
    [
        ("", HELLO),
        ("  ", HELLO),
        ("x" * (MAX_INPUT_ID_BYTES + 1), HELLO),
        ("i", []),
        ("i", [Message([InputText(" \n\u3000")])]),
        ("i", [Message([])]),
    ],
)
def test_invalid_steers_are_invalid_input(input_id: str, input_: list[Message]) -> None:
    with pytest.raises(ValidationError) as caught:
        PromptSteer(input_id, input_).validate()
    assert caught.value.code == SteerErrorCode.INVALID_INPUT


@pytest.mark.parametrize(
    ("ack", "stage"),
    [
        (PromptSteerAck("i", False, written=True), ReceiptStage.WRITTEN),
        (PromptSteerAck("i", True), ReceiptStage.ACCEPTED),
        (PromptSteerAck("i", True, written=True), ReceiptStage.ACCEPTED),
        (PromptSteerAck("i", False, error_code="busy"), ReceiptStage.REFUSED),
        (PromptSteerAck("i", False, error_code="outcome_unknown"), ReceiptStage.UNKNOWN),
    ],
)
def test_receipt_stages(ack: PromptSteerAck, stage: ReceiptStage) -> None:
    assert ack.check("i") is stage


@pytest.mark.parametrize(
    "ack",
    [
        PromptSteerAck("other", True),
        PromptSteerAck("i", False),
        PromptSteerAck("i", True, error_code="busy"),
        PromptSteerAck("i", False, written=True, error_code="busy"),
        PromptSteerAck("i", False, error_code="private detail"),
    ],
)
def test_contradictory_or_foreign_receipts_prove_nothing(ack: PromptSteerAck) -> None:
    with pytest.raises(ValidationError):
        ack.check("i")
