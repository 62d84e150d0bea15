"""Per-role event streams: appending the pair of events a contact action produces, and
reading a role's stream with the cursor rules of protocol 1.4.

Every action on a contact appends one event to each side's stream: `outbound` to the
actor's role (so its other instances see it) and `inbound` to the peer's. `seq` is the
role's server-side cursor and is never reused; `event_id` is stable. Reads return only
events of unexpired contacts, and every message is marked untrusted external content.
"""

from __future__ import annotations

from typing import Any

from allinone.core.comms.errors import CommsError, NotFound, Rejected
from allinone.core.comms.identities import Caller
from allinone.core.ids import Clock, Ids
from storage import comms_events as event_rows
from storage import comms_identities as role_rows
from storage.database import Database, Tx
from storage.rows import Queryable

UNTRUSTED = "untrusted_external"


def peer_of(contact: dict[str, Any], role_id: str) -> str:
    if contact["opener_role_id"] == role_id:
        return str(contact["recipient_role_id"])
    return str(contact["opener_role_id"])


async def emit(
    tx: Tx,
    ids: Ids,
    contact: dict[str, Any],
    actor_role_id: str,
    type_: str,
    now: int,
    *,
    message_id: str | None = None,
    peer_payload: dict[str, Any] | None = None,
) -> dict[str, int]:
    """Append the inbound event for the peer and the outbound one for the actor; return
    the seq each role's stream assigned."""
    peer = peer_of(contact, actor_role_id)
    seqs: dict[str, int] = {}
    for role_id, direction, other in (
        (peer, "inbound", actor_role_id),
        (actor_role_id, "outbound", peer),
    ):
        seq = await role_rows.next_seq(tx, role_id)
        payload: dict[str, Any] = {"peer_role_id": other}
        if peer_payload:
            payload.update(peer_payload)
        await event_rows.append(
            tx,
            {
                "role_id": role_id,
                "seq": seq,
                "event_id": ids.new("cevt"),
                "contact_id": contact["id"],
                "type": type_,
                "direction": direction,
                "message_id": message_id,
                "payload": payload,
                "created_at": now,
            },
        )
        seqs[role_id] = seq
    return seqs


def render_event(row: dict[str, Any], stream_id: str) -> dict[str, Any]:
    event: dict[str, Any] = {
        "seq": row["seq"],
        "event_id": row["event_id"],
        "stream_id": stream_id,
        "type": row["type"],
        "direction": row["direction"],
        "contact_id": row["contact_id"],
        "created_at": row["created_at"],
        "contact_expires_at": row["contact_expires_at"],
        **row["payload"],
    }
    if row["message_id"] is not None:
        event["message"] = {
            "id": row["message_id"],
            "kind": row["message_kind"],
            "text": row["message_text"],
            "content_trust": UNTRUSTED,
        }
    return event


class Events:
    def __init__(self, db: Database, clock: Clock) -> None:
        self._db = db
        self._clock = clock

    async def read(
        self, caller: Caller, after: int, limit: int, stream_id: str | None
    ) -> dict[str, Any]:
        """A page of the caller's role stream after `after`.

        STREAM_CHANGED when `stream_id` is not the role's current stream;
        CURSOR_RESET_REQUIRED when `after` lies beyond anything this stream has issued.
        `history_gap` is true when deleted or expired history lies after the cursor.
        """
        now = self._clock.now()
        if after > 0 and stream_id is None:
            raise CommsError(
                "A cursor after 0 must be sent with the stream_id it came from.",
                code="STREAM_ID_REQUIRED",
                param="stream_id",
            )

        async def load(r: Queryable) -> dict[str, Any]:
            role = await role_rows.role(r, caller.role_id)
            if role is None:
                raise NotFound("The role no longer exists.", code="ROLE_NOT_FOUND")
            if stream_id is not None and stream_id != role["stream_id"]:
                raise Rejected(
                    "The event stream has changed; stop, reconcile and replay from 0.",
                    code="STREAM_CHANGED",
                    param="stream_id",
                )
            if after > role["last_seq"]:
                raise Rejected(
                    "The cursor is beyond this stream; confirm the origin and role, then"
                    " replay from 0 and deduplicate by event_id.",
                    code="CURSOR_RESET_REQUIRED",
                    param="after",
                )
            items, more = await event_rows.page(r, caller.role_id, after, limit, now)
            gap = role["gap_through_seq"] > after or await event_rows.expired_after(
                r, caller.role_id, after, now
            )
            return {
                "object": "list",
                "stream_id": role["stream_id"],
                "items": [render_event(item, role["stream_id"]) for item in items],
                "has_more": more,
                "next_after": items[-1]["seq"] if items else after,
                "history_gap": gap,
                "server_time": now,
            }

        return await self._db.read(load)
