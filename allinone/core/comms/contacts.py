"""Contacts: opening one with a first message, replies, accept, close, and the
communication view (`GET /contacts/{id}/communication`).

A contact allows REPLY_LIMIT replies in total (both sides together; the opening message
is not a reply) until the original recipient's primary instance accepts it, which raises
the total to ACCEPTED_REPLY_LIMIT. It expires CONTACT_TTL_SECONDS after creation whatever
happens. Message writes need an idempotency key: a retry with the same key and body
returns the first result (stored with the message, in the same transaction); the same
key with another body is IDEMPOTENCY_CONFLICT. A retried reply passes the same lease
check as a first one, so on a claimed contact only the current lease holder gets the
first result back.
"""

from __future__ import annotations

import hashlib
from typing import Any

import msgspec

from allinone.core.comms.errors import CommsError, Forbidden, NotFound, Rejected
from allinone.core.comms.events import emit, peer_of
from allinone.core.comms.identities import Caller, writer_role
from allinone.core.comms.leases import LeaseHeaders, require_lease, require_lease_to_close
from allinone.core.comms.limits import (
    ACCEPTED_REPLY_LIMIT,
    CONTACT_TTL_SECONDS,
    REPLY_LIMIT,
)
from allinone.core.comms.models import OpenContact, Reply
from allinone.core.comms.states import ContactState, check_contact, shown_state
from allinone.core.ids import Clock, Ids
from storage import comms_claims as claim_rows
from storage import comms_contacts as rows
from storage import comms_identities as role_rows
from storage.database import Database, Tx
from storage.rows import Queryable

_encoder = msgspec.json.Encoder(order="sorted")


def request_hash(value: dict[str, Any]) -> str:
    return hashlib.sha256(_encoder.encode(value)).hexdigest()


async def member_contact(q: Queryable, contact_id: str, role_id: str) -> dict[str, Any]:
    """The contact if the role is one of its two parties; 404 otherwise (an outsider
    learns nothing about it)."""
    contact = await rows.get(q, contact_id)
    if contact is None or role_id not in (contact["opener_role_id"], contact["recipient_role_id"]):
        raise NotFound("No such contact for this role.", code="CONTACT_NOT_FOUND")
    return contact


def check_writable(contact: dict[str, Any], now: int) -> None:
    if now >= contact["expires_at"]:
        raise Rejected("The contact has expired.", code="CONTACT_CLOSED")
    if contact["state"] == ContactState.CLOSED:
        raise Rejected("The contact is closed.", code="CONTACT_CLOSED")


async def communication_view(
    q: Queryable, contact: dict[str, Any], role_id: str, now: int
) -> dict[str, Any]:
    """The contact as `role_id` sees it. The peer's phase is shown only when its latest
    progress covers this role's latest outbound message; otherwise it is `unknown`.
    Whether the peer's owner has read anything is always unknown."""
    peer = peer_of(contact, role_id)
    latest = await rows.latest_message_from(q, contact["id"], role_id)
    peer_claim = await claim_rows.get(q, contact["id"], peer)
    own_claim = await claim_rows.get(q, contact["id"], role_id)
    peer_phase = "unknown"
    if (
        latest is not None
        and peer_claim is not None
        and peer_claim["phase"] is not None
        and (peer_claim["phase_through_seq"] or 0) >= latest["recipient_seq"]
    ):
        peer_phase = peer_claim["phase"]
    expired = now >= contact["expires_at"]
    closed_by = None
    if contact["closed_by_role_id"] is not None:
        closed_by = "self" if contact["closed_by_role_id"] == role_id else "peer"
    return {
        "object": "contact.communication",
        "contact_id": contact["id"],
        "state": "expired" if expired else contact["state"],
        "role": "opener" if contact["opener_role_id"] == role_id else "recipient",
        "peer_role_id": peer,
        "created_at": contact["created_at"],
        "expires_at": contact["expires_at"],
        "accepted": contact["accepted_at"] is not None,
        "reply_limit": contact["reply_limit"],
        "replies_used": contact["replies_used"],
        "replies_remaining": max(contact["reply_limit"] - contact["replies_used"], 0),
        "closed_at": contact["closed_at"],
        "closed_by": closed_by,
        "latest_outbound_message_id": latest["id"] if latest else None,
        "latest_outbound_received_at": latest["received_at"] if latest else None,
        "peer_phase": peer_phase,
        "peer_owner_read": "unknown",
        "claim": None if own_claim is None else _claim_summary(own_claim, now),
        "server_time": now,
    }


def _claim_summary(claim: dict[str, Any], now: int) -> dict[str, Any]:
    return {
        "state": shown_state(claim, now),
        "through_seq": claim["through_seq"],
        "lease_epoch": claim["lease_epoch"],
        "lease_expires_at": claim["lease_expires_at"],
        "handled_seq": claim["handled_seq"],
        "phase": claim["phase"],
    }


def _message_view(message: dict[str, Any], contact: dict[str, Any]) -> dict[str, Any]:
    return {
        "object": "contact.message",
        "id": message["id"],
        "contact_id": contact["id"],
        "kind": message["kind"],
        "sender_role_id": message["sender_role_id"],
        "created_at": message["created_at"],
        "contact_expires_at": contact["expires_at"],
    }


async def _replay(tx: Tx, role_id: str, key: str, digest: str) -> dict[str, Any] | None:
    earlier = await rows.idempotent_result(tx, role_id, key)
    if earlier is None:
        return None
    if earlier["request_hash"] != digest:
        raise Rejected(
            "This idempotency key was used with a different request.",
            code="IDEMPOTENCY_CONFLICT",
        )
    response: dict[str, Any] = earlier["response"]
    return response


class Contacts:
    def __init__(self, db: Database, ids: Ids, clock: Clock) -> None:
        self._db = db
        self._ids = ids
        self._clock = clock

    async def open(
        self, caller: Caller, body: OpenContact, key: str
    ) -> tuple[dict[str, Any], bool]:
        """Open a contact to another role with its first message. Return (message view,
        replayed)."""
        digest = request_hash({"op": "open", "to": body.to_role_id, "message": body.message})
        now = self._clock.now()
        contact_id = self._ids.new("contact")
        message_id = self._ids.new("cmsg")

        async def job(tx: Tx) -> tuple[dict[str, Any], bool]:
            role = await writer_role(tx, caller, primary_only=True)
            replay = await _replay(tx, role["id"], key, digest)
            if replay is not None:
                return replay, True
            if body.to_role_id == role["id"]:
                raise CommsError("A role cannot open a contact to itself.", param="to_role_id")
            if await role_rows.live_role(tx, body.to_role_id) is None:
                raise NotFound("No such role.", code="ROLE_NOT_FOUND", param="to_role_id")
            contact = {
                "id": contact_id,
                "opener_role_id": role["id"],
                "recipient_role_id": body.to_role_id,
                "state": ContactState.OPEN.value,
                "reply_limit": REPLY_LIMIT,
                "created_at": now,
                "expires_at": now + CONTACT_TTL_SECONDS,
            }
            await rows.insert(tx, contact)
            return await self._send(
                tx, contact, role["id"], "opening", body.message, message_id, key, digest, now
            ), False

        return await self._db.write(job)

    async def reply(
        self, caller: Caller, contact_id: str, body: Reply, key: str, lease: LeaseHeaders
    ) -> tuple[dict[str, Any], bool]:
        digest = request_hash({"op": "reply", "contact": contact_id, "message": body.message})
        now = self._clock.now()
        message_id = self._ids.new("cmsg")

        async def job(tx: Tx) -> tuple[dict[str, Any], bool]:
            role = await writer_role(tx, caller, primary_only=True)
            contact = await member_contact(tx, contact_id, role["id"])
            # A retry passes the lease check a first request would: an earlier executor
            # (or one without the lease) learns nothing through its old key.
            await require_lease(tx, contact_id, role, lease, now)
            replay = await _replay(tx, role["id"], key, digest)
            if replay is not None:
                return replay, True
            check_writable(contact, now)
            if contact["replies_used"] >= contact["reply_limit"] or not await rows.count_reply(
                tx, contact_id, contact["replies_used"]
            ):
                raise Rejected(
                    f"This contact allows {contact['reply_limit']} replies in total.",
                    code="REPLY_LIMIT_REACHED",
                )
            return await self._send(
                tx, contact, role["id"], "reply", body.message, message_id, key, digest, now
            ), False

        return await self._db.write(job)

    async def _send(
        self,
        tx: Tx,
        contact: dict[str, Any],
        sender: str,
        kind: str,
        text: str,
        message_id: str,
        key: str,
        digest: str,
        now: int,
    ) -> dict[str, Any]:
        seqs = await emit(tx, self._ids, contact, sender, "message", now, message_id=message_id)
        message = {
            "id": message_id,
            "contact_id": contact["id"],
            "sender_role_id": sender,
            "kind": kind,
            "text": text,
            "created_at": now,
            "recipient_seq": seqs[peer_of(contact, sender)],
        }
        await rows.insert_message(tx, message)
        view = _message_view(message, contact)
        await rows.remember(tx, sender, key, digest, contact["id"], view, now)
        return view

    async def accept(self, caller: Caller, contact_id: str, lease: LeaseHeaders) -> dict[str, Any]:
        """Raise the reply limit; only the original recipient's primary may. Repeat-safe."""
        now = self._clock.now()

        async def job(tx: Tx) -> dict[str, Any]:
            role = await writer_role(tx, caller, primary_only=True)
            contact = await member_contact(tx, contact_id, role["id"])
            if contact["recipient_role_id"] != role["id"]:
                raise Forbidden(
                    "Only the contact's original recipient may accept it.",
                    code="NOT_ORIGINAL_RECIPIENT",
                )
            await require_lease(tx, contact_id, role, lease, now)
            check_writable(contact, now)
            if contact["state"] == ContactState.OPEN:
                check_contact(contact["state"], ContactState.ACCEPTED)
                fields = {"reply_limit": ACCEPTED_REPLY_LIMIT, "accepted_at": now}
                if not await rows.transition(
                    tx, contact_id, ContactState.OPEN.value, ContactState.ACCEPTED.value, fields
                ):
                    raise Rejected("The contact changed meanwhile; retry.", code="CONFLICT")
                await emit(
                    tx,
                    self._ids,
                    contact,
                    role["id"],
                    "contact.accepted",
                    now,
                    peer_payload={"reply_limit": ACCEPTED_REPLY_LIMIT},
                )
            return await self._view(tx, contact_id, role["id"], now)

        return await self._db.write(job)

    async def close(self, caller: Caller, contact_id: str, lease: LeaseHeaders) -> dict[str, Any]:
        """Close the contact; either party may. Closing a closed contact changes nothing.
        The lease is needed only while an executor of this role holds a live one."""
        now = self._clock.now()

        async def job(tx: Tx) -> dict[str, Any]:
            role = await writer_role(tx, caller, primary_only=True)
            contact = await member_contact(tx, contact_id, role["id"])
            await require_lease_to_close(tx, contact_id, role, lease, now)
            if contact["state"] != ContactState.CLOSED:
                check_writable(contact, now)
                check_contact(contact["state"], ContactState.CLOSED)
                fields = {"closed_at": now, "closed_by_role_id": role["id"]}
                if not await rows.transition(
                    tx, contact_id, contact["state"], ContactState.CLOSED.value, fields
                ):
                    raise Rejected("The contact changed meanwhile; retry.", code="CONFLICT")
                await emit(tx, self._ids, contact, role["id"], "contact.closed", now)
            return await self._view(tx, contact_id, role["id"], now)

        return await self._db.write(job)

    async def communication(self, caller: Caller, contact_id: str) -> dict[str, Any]:
        now = self._clock.now()

        async def load(r: Queryable) -> dict[str, Any]:
            contact = await member_contact(r, contact_id, caller.role_id)
            return await communication_view(r, contact, caller.role_id, now)

        return await self._db.read(load)

    async def _view(self, tx: Tx, contact_id: str, role_id: str, now: int) -> dict[str, Any]:
        contact = await rows.get(tx, contact_id)
        assert contact is not None
        return await communication_view(tx, contact, role_id, now)
