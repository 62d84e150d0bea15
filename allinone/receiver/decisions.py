"""What adapters and the owner hand back: the handler's decision, the notifier's answer
and the owner's resolution.json, each decoded strictly (unknown fields are refused)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec

MAX_REPLY_CHARS = 8000
MAX_SUMMARY_CHARS = 2000


class Decision(msgspec.Struct, forbid_unknown_fields=True):
    schema_version: Literal[1]
    action: Literal["reply", "waiting_owner", "completed"]
    message: Annotated[str, msgspec.Meta(max_length=MAX_REPLY_CHARS)] | None = None
    accept_contact: bool = False
    owner_summary: Annotated[str, msgspec.Meta(max_length=MAX_SUMMARY_CHARS)] | None = None

    def __post_init__(self) -> None:
        if self.action == "reply" and not (self.message or "").strip():
            raise ValueError("a reply needs a non-empty message")


class NotifierAnswer(msgspec.Struct, forbid_unknown_fields=True):
    schema_version: Literal[1]
    notification_id: str
    delivered: bool


class Resolution(msgspec.Struct, forbid_unknown_fields=True):
    owner_confirmed: Literal[True]
    job_id: str
    result: Decision
    notification_delivered: bool


def decision(value: dict[str, Any]) -> Decision | None:
    """The handler's decision, or None when it is malformed."""
    try:
        return msgspec.convert(value, Decision)
    except (msgspec.ValidationError, ValueError):
        return None


def notifier_answer(value: dict[str, Any]) -> NotifierAnswer | None:
    try:
        return msgspec.convert(value, NotifierAnswer)
    except msgspec.ValidationError:
        return None
