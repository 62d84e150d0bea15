"""Interaction messages: user-choice decision shape, and decision receipts."""

import msgspec
import pytest

from runtime.proto.codec import decode_from_core
from runtime.proto.errors import DecisionErrorCode, DecodeError, DecodeErrorCode, ValidationError
from runtime.proto.interactions import (
    CANCEL_ACK_CODES,
    ChoiceOption,
    ChoiceQuestion,
    InteractionDecisionAck,
    PermissionDecision,
    PromptForUserChoice,
    PromptForUserChoiceDecision,
    QuestionAnswer,
)
from runtime.proto.run import Done

ISSUED = ["q1", "q2", "q3"]


def _decision(
    *answers: tuple[str, list[str]], cancelled: bool = False
) -> PromptForUserChoiceDecision:
    pairs = [QuestionAnswer(question, values) for question, values in answers]
    return PromptForUserChoiceDecision("delivery", pairs, cancelled)


def test_answers_bind_to_issued_question_ids_not_order() -> None:
    decision = _decision(("q3", ["Blue", "Green"]), ("q1", []))
    assert decision.answers_for(ISSUED) == {"q3": ["Blue", "Green"], "q1": []}


def test_a_cancellation_carries_no_answers() -> None:
    assert _decision(cancelled=True).answers_for(ISSUED) == {}
    with pytest.raises(ValidationError) as caught:
        _decision(("q1", ["Blue"]), cancelled=True).validate()
    assert caught.value.code == DecisionErrorCode.INVALID_DECISION


@pytest.mark.parametrize(
    "decision",
    [
        _decision(("q1", ["a"]), ("q1", ["b"])),
        _decision(("", ["a"])),
        _decision((" ", ["a"])),
        PromptForUserChoiceDecision("", []),
    ],
)
def test_invalid_decision_shapes_are_rejected(decision: PromptForUserChoiceDecision) -> None:
    with pytest.raises(ValidationError) as caught:
        decision.validate()
    assert caught.value.code == DecisionErrorCode.INVALID_DECISION


def test_an_answer_to_a_question_that_was_not_issued_is_rejected() -> None:
    with pytest.raises(ValidationError):
        _decision(("q9", ["a"])).answers_for(ISSUED)


@pytest.mark.parametrize(
    "body",
    [
        b'{"delivery_id":"d","question_answers":[{"question_id":"q1"}]}',
        b'{"delivery_id":"d","question_answers":[{"answers":["a"]}]}',
        b'{"delivery_id":"d","question_answers":[{"question_id":"q1","answers":[1]}]}',
        b'{"delivery_id":"d","question_answers":null}',
        b'{"delivery_id":"d","cancelled":"true"}',
        b'{"delivery_id":"d","question_answers":[{"header":"Colour","answer":"Blue"}]}',
    ],
)
def test_decisions_are_decoded_strictly(body: bytes) -> None:
    with pytest.raises(DecodeError):
        decode_from_core(
            b'{"type":"prompt_for_user_choice_decision","id":"ask_1","payload":%s}' % body
        )


def test_a_permission_decision_needs_a_delivery() -> None:
    PermissionDecision("delivery", False).validate()
    with pytest.raises(ValidationError):
        PermissionDecision("", True).validate()


def test_a_user_choice_needs_unique_question_ids() -> None:
    question = ChoiceQuestion("q1", "Colour?", [ChoiceOption("Blue")], header="Colour")
    ask = PromptForUserChoice("ask_1", [question])
    ask.validate()
    assert ask.question_ids == ["q1"]
    for invalid in (
        PromptForUserChoice("ask_1", [question, question]),
        PromptForUserChoice("ask_1", []),
        PromptForUserChoice("", [question]),
        PromptForUserChoice("ask_1", [msgspec.structs.replace(question, id=" ")]),
    ):
        with pytest.raises(ValidationError):
            invalid.validate()


@pytest.mark.parametrize(
    ("ack", "codes"),
    [
        (InteractionDecisionAck("d", True), None),
        (InteractionDecisionAck("d", False, "decision_conflict", "different"), None),
        (InteractionDecisionAck("d", True, outcome=Done()), CANCEL_ACK_CODES),
        (InteractionDecisionAck("d", False, "cancel_timeout"), CANCEL_ACK_CODES),
    ],
)
def test_valid_receipts(ack: InteractionDecisionAck, codes: frozenset[str] | None) -> None:
    if codes is None:
        ack.check("d")
    else:
        ack.check("d", codes)


@pytest.mark.parametrize(
    "ack",
    [
        InteractionDecisionAck("other", True),
        InteractionDecisionAck("", True),
        InteractionDecisionAck("d", True, "not_ready"),
        InteractionDecisionAck("d", False),
        InteractionDecisionAck("d", False, "cancel_timeout"),
        InteractionDecisionAck("d", False, "private detail"),
    ],
)
def test_receipts_without_the_delivery_or_with_contradictions_prove_nothing(
    ack: InteractionDecisionAck,
) -> None:
    with pytest.raises(ValidationError) as caught:
        ack.check("d")
    assert caught.value.code == DecodeErrorCode.INVALID_RECEIPT
