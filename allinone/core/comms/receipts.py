"""Receipts: an instance confirming that it persisted inbound events.

A receipt names seqs of the caller's role stream; only inbound events may be receipted.
It is repeat-safe, moves only the caller's own cursor (the highest seq it receipted),
marks the message as received by the peer (the first receipt wins), and creates no
event and no reply. Seqs whose contact retention already deleted are reported as
`ignored`. A receipt naming the stream its seqs came from (`stream_id`) is refused with
STREAM_CHANGED when the role's stream is another one, so a seq saved under an earlier
stream is never confirmed against a later stream that issued it again; a receipt naming
the event_id of each seq (`event_ids`, in the order of `event_seqs`) is refused with
EVENT_MISMATCH when a seq now names another event, so a receiver never confirms an event
it did not save.
"""

from __future__ import annotations

from typing import Any

from allinone.core.comms.errors import CommsError, Rejected
from allinone.core.comms.identities import Caller, writer_role
from allinone.core.comms.models import Receipts as ReceiptsBody
from allinone.core.ids import Clock
from storage import comms_contacts as contact_rows
from storage import comms_events as event_rows
from storage import comms_identities as role_rows
from storage.database import Database, Tx


class Receipts:
    def __init__(self, db: Database, clock: Clock) -> None:
        self._db = db
        self._clock = clock

    async def record(self, caller: Caller, body: ReceiptsBody) -> dict[str, Any]:
        if not body.persisted:
            raise CommsError(
                "A receipt confirms persisted events; persisted must be true.",
                code="RECEIPT_NOT_PERSISTED",
                param="persisted",
            )
        named = _named(body)
        seqs = sorted(set(body.event_seqs))
        now = self._clock.now()

        async def job(tx: Tx) -> dict[str, Any]:
            role = await writer_role(tx, caller, primary_only=False)
            if body.stream_id is not None and body.stream_id != role["stream_id"]:
                raise Rejected(
                    "The event stream has changed; reconcile before sending these receipts.",
                    code="STREAM_CHANGED",
                    param="stream_id",
                )
            acknowledged: list[int] = []
            ignored: list[int] = []
            for seq in seqs:
                event = await _receiptable(tx, role, seq, named)
                if event is None:
                    ignored.append(seq)
                    continue
                await event_rows.insert_receipt(
                    tx, caller.instance_id, seq, event["contact_id"], now
                )
                if event["message_id"] is not None:
                    await contact_rows.mark_received(tx, event["message_id"], now)
                acknowledged.append(seq)
            if acknowledged:
                await role_rows.advance_cursor(tx, caller.instance_id, acknowledged[-1])
            instance = await role_rows.instance(tx, caller.instance_id)
            assert instance is not None
            return {
                "object": "communication.receipts",
                "acknowledged": acknowledged,
                "ignored": ignored,
                "cursor": instance["cursor"],
                "server_time": now,
            }

        return await self._db.write(job)


def _named(body: ReceiptsBody) -> dict[int, str]:
    """The event_id each receipted seq names, when the receipt says."""
    if body.event_ids is None:
        return {}
    if len(body.event_ids) != len(body.event_seqs):
        raise CommsError(
            "event_ids must name one event per seq, in the order of event_seqs.",
            param="event_ids",
        )
    return dict(zip(body.event_seqs, body.event_ids, strict=True))


async def _receiptable(
    tx: Tx, role: dict[str, Any], seq: int, named: dict[int, str]
) -> dict[str, Any] | None:
    """The inbound event `seq` names in the role's stream, checked against the event_id
    the receipt names for it; None when retention already deleted it."""
    if seq > role["last_seq"]:
        raise CommsError(
            f"Seq {seq} is not in this stream.", code="UNKNOWN_EVENT_SEQ", param="event_seqs"
        )
    event = await event_rows.at(tx, role["id"], seq)
    if event is None:
        return None
    if seq in named and named[seq] != event["event_id"]:
        raise Rejected(
            f"Seq {seq} names another event than the one receipted.",
            code="EVENT_MISMATCH",
            param="event_ids",
        )
    if event["direction"] != "inbound":
        raise CommsError(
            f"Seq {seq} is an outbound event; receipt inbound events only.",
            code="RECEIPT_NOT_INBOUND",
            param="event_seqs",
        )
    return event
