"""Request bodies of the communication routes, decoded strictly (unknown fields are
refused)."""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

from allinone.core.comms.limits import MAX_MESSAGE_CHARS, MAX_NAME_CHARS, MAX_RECEIPT_SEQS

Name = Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_NAME_CHARS)]
Text = Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_MESSAGE_CHARS)]
Seq = Annotated[int, msgspec.Meta(ge=1)]
Id = Annotated[str, msgspec.Meta(min_length=1, max_length=200)]


class OpenContact(msgspec.Struct, forbid_unknown_fields=True):
    to_role_id: Id
    message: Text


class Reply(msgspec.Struct, forbid_unknown_fields=True):
    message: Text


class Accept(msgspec.Struct, forbid_unknown_fields=True):
    accept: bool


class Close(msgspec.Struct, forbid_unknown_fields=True):
    pass


class Claim(msgspec.Struct, forbid_unknown_fields=True):
    lease_id: str
    through_seq: Seq
    renew: bool = False
    expected_lease_epoch: Annotated[int, msgspec.Meta(ge=0)] | None = None
    resume: bool = False
    owner_confirmed: bool = False


PhaseName = Literal["processing", "waiting_owner", "waiting_reply", "completed", "failed"]


class Progress(msgspec.Struct, forbid_unknown_fields=True):
    through_seq: Seq
    phase: PhaseName


class Receipts(msgspec.Struct, forbid_unknown_fields=True):
    event_seqs: Annotated[list[Seq], msgspec.Meta(min_length=1, max_length=MAX_RECEIPT_SEQS)]
    persisted: bool
    stream_id: Id | None = None
    event_ids: Annotated[list[Id], msgspec.Meta(max_length=MAX_RECEIPT_SEQS)] | None = None


class ReceiverReport(msgspec.Struct, forbid_unknown_fields=True):
    mode: Literal["polling", "on_demand"]
    handler_state: Literal["unsupported", "configured", "verified_reported"]
    enabled: bool


class RoleCreate(msgspec.Struct, forbid_unknown_fields=True):
    name: Name
    agent_id: Id | None = None


class InstanceCreate(msgspec.Struct, forbid_unknown_fields=True):
    name: Name


class PrimarySet(msgspec.Struct, forbid_unknown_fields=True):
    instance_id: Id
    expected_epoch: Annotated[int, msgspec.Meta(ge=0)]


class StreamRotate(msgspec.Struct, forbid_unknown_fields=True):
    expected_stream_id: Id
