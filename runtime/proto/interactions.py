"""Interactions: permission requests, user choices, decisions and their receipts.

Runtime -> Core: `permission_request` and `prompt_for_user_choice` ride on the Run ID
and name the interaction in their payload (`request_id`, `ask_id`); a
`permission_cancel` (envelope id = interaction id) withdraws a permission request.
Core -> Runtime: `permission_decision` and `prompt_for_user_choice_decision` use the
interaction id as envelope id and carry a fresh `delivery_id` per attempt. The Runtime
answers every decision, function result and cancellation with `interaction_decision_ack`
echoing that delivery id; only `applied: true` proves the operation settled.

A user-choice decision identifies answers by explicit `question_id`, never by order or
header: ids must be issued and unique, an omitted question stays unanswered, an empty
`answers` array is an explicit non-answer, and `cancelled: true` carries no answers.
It is decoded strictly at every depth and validated before native submission.
"""

from __future__ import annotations

from typing import Any

import msgspec

from runtime.proto.errors import (
    CancelErrorCode,
    DecisionErrorCode,
    DecodeErrorCode,
    ValidationError,
)
from runtime.proto.run import Done
from runtime.proto.strictness import LENIENT, STRICT

_STRICT = STRICT
_OUT = LENIENT

DECISION_ACK_CODES = frozenset(DecisionErrorCode)
CANCEL_ACK_CODES = frozenset(CancelErrorCode)


class PermissionRequest(msgspec.Struct, **_OUT):
    request_id: str  # the interaction id
    tool: str
    title: str
    detail: str = ""
    payload: dict[str, Any] | None = None


class PermissionCancel(msgspec.Struct, **_OUT):
    """Withdraws the permission request named by the envelope id; no payload fields."""


class PermissionDecision(msgspec.Struct, **_STRICT):
    delivery_id: str
    approved: bool  # always emitted
    message: str = ""
    updated_input: dict[str, Any] | None = None

    def validate(self) -> None:
        if not self.delivery_id:
            raise ValidationError(DecisionErrorCode.INVALID_DECISION, "decision needs a delivery")


class ChoiceOption(msgspec.Struct, **_OUT):
    label: str
    description: str = ""


class ChoiceQuestion(msgspec.Struct, **_OUT):
    id: str
    question: str
    options: list[ChoiceOption]
    header: str = ""  # display only; never identifies an answer
    multi_select: bool = False
    is_other: bool = False
    is_secret: bool = False


class PromptForUserChoice(msgspec.Struct, **_OUT):
    ask_id: str  # the interaction id
    questions: list[ChoiceQuestion]
    tool_use_id: str = ""
    auto_resolution_ms: int | None = None

    @property
    def question_ids(self) -> list[str]:
        return [question.id for question in self.questions]

    def validate(self) -> None:
        """An ask id and at least one question, each with a unique non-blank id."""
        ids = self.question_ids
        if not self.ask_id or not ids or len(set(ids)) != len(ids) or not all(map(str.strip, ids)):
            raise ValidationError(DecodeErrorCode.INVALID_PAYLOAD, "user choice is invalid")


class QuestionAnswer(msgspec.Struct, **_STRICT):
    question_id: str
    answers: list[str]  # required and non-null; empty means an explicit non-answer


class PromptForUserChoiceDecision(msgspec.Struct, **_STRICT):
    delivery_id: str
    question_answers: list[QuestionAnswer] = []
    cancelled: bool = False
    reason: str = ""

    def validate(self) -> None:
        """Raises ValidationError(`invalid_decision`) for any shape the seed forbids."""
        if not self.delivery_id:
            raise ValidationError(DecisionErrorCode.INVALID_DECISION, "decision needs a delivery")
        if self.cancelled and self.question_answers:
            raise ValidationError(DecisionErrorCode.INVALID_DECISION, "cancelled with answers")
        seen: set[str] = set()
        for answer in self.question_answers:
            if not answer.question_id.strip() or answer.question_id in seen:
                raise ValidationError(
                    DecisionErrorCode.INVALID_DECISION, "question ids must be unique"
                )
            seen.add(answer.question_id)

    def answers_for(self, question_ids: list[str]) -> dict[str, list[str]]:
        """Bind the answers to the issued questions; call before native submission.

        Raises ValidationError(`invalid_decision`) for an invalid shape or an answer to
        a question that was not issued. Omitted questions are absent from the result.
        """
        self.validate()
        issued = set(question_ids)
        answers: dict[str, list[str]] = {}
        for answer in self.question_answers:
            if answer.question_id not in issued:
                raise ValidationError(DecisionErrorCode.INVALID_DECISION, "unknown question")
            answers[answer.question_id] = list(answer.answers)
        return answers


class InteractionDecisionAck(msgspec.Struct, **_OUT):
    delivery_id: str
    applied: bool  # always emitted
    error_code: str = ""
    error: str = ""
    outcome: Done | None = None  # continuity snapshot of a cancelled Turn without `done`

    def check(self, delivery_id: str, codes: frozenset[str] = DECISION_ACK_CODES) -> None:
        """Accept only a receipt for `delivery_id`: applied without a code, or refused
        with one of `codes` (CANCEL_ACK_CODES for cancellations). Raises
        ValidationError(`invalid_receipt`); such a reply cannot prove acceptance."""
        if not self.delivery_id or self.delivery_id != delivery_id:
            raise ValidationError(DecodeErrorCode.INVALID_RECEIPT, "receipt names another delivery")
        if (self.applied and self.error_code) or (
            not self.applied and self.error_code not in codes
        ):
            raise ValidationError(DecodeErrorCode.INVALID_RECEIPT, "receipt is contradictory")
