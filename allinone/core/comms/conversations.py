"""The owner's view of conversations, and the owner acting as one of its instances.

A project's owner (its API key) sees every contact one of whose roles is the project's,
with the messages both sides wrote, each with its delivery status, and its own roles'
claims; never the other project's claims or instances. Contacts may join roles of
different projects: that is how two owners' agents talk on one platform. A project is a
trust boundary for what it stores and manages, not for whom its roles may write to, and
every message a role receives is untrusted external content either way.

`as_instance` lets the owner act through one of its instances (open a contact, close
one) with the role's current primary epoch: the same domain rules apply as to the
instance's own runtime calls (primary only, leases, idempotency keys).
"""

from __future__ import annotations

from typing import Any

from allinone.core.comms.contacts import communication_view
from allinone.core.comms.errors import NotFound
from allinone.core.comms.identities import Caller
from allinone.core.comms.states import shown_state
from allinone.core.ids import Clock
from storage import comms_claims as claim_rows
from storage import comms_contacts as rows
from storage import comms_identities as role_rows
from storage.database import Database
from storage.rows import Queryable

MAX_CONTACTS_LISTED = 100


def _message(message: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": message["id"],
        "kind": message["kind"],
        "sender_role_id": message["sender_role_id"],
        "text": message["text"],
        "created_at": message["created_at"],
        "status": "received" if message["received_at"] is not None else "sent",
        "received_at": message["received_at"],
        "content_trust": "untrusted_external",
    }


class Conversations:
    def __init__(self, db: Database, clock: Clock) -> None:
        self._db = db
        self._clock = clock

    async def as_instance(self, project_id: str, instance_id: str) -> Caller:
        """The project's instance as a caller, with its role's current primary epoch."""

        async def load(r: Queryable) -> Caller:
            instance = await role_rows.instance(r, instance_id)
            role = None if instance is None else await role_rows.role(r, instance["role_id"])
            if instance is None or role is None or role["project_id"] != project_id:
                raise NotFound("No such instance in this project.", code="INSTANCE_NOT_FOUND")
            return Caller(instance_id, str(role["id"]), int(role["primary_epoch"]))

        return await self._db.read(load)

    async def contacts(self, project_id: str) -> list[dict[str, Any]]:
        now = self._clock.now()

        async def load(r: Queryable) -> list[dict[str, Any]]:
            ours = {role["id"] for role in await role_rows.project_roles(r, project_id, 1000)}
            found = await rows.project_contacts(r, project_id, MAX_CONTACTS_LISTED)
            return [await self._summary(r, contact, ours, now) for contact in found]

        return await self._db.read(load)

    async def conversation(self, project_id: str, contact_id: str) -> dict[str, Any]:
        now = self._clock.now()

        async def load(r: Queryable) -> dict[str, Any]:
            ours = {role["id"] for role in await role_rows.project_roles(r, project_id, 1000)}
            contact = await rows.get(r, contact_id)
            if contact is None or not ours & {
                contact["opener_role_id"],
                contact["recipient_role_id"],
            }:
                raise NotFound("No such contact for this project.", code="CONTACT_NOT_FOUND")
            view = await self._summary(r, contact, ours, now)
            view["object"] = "comms.conversation"
            view["messages"] = [_message(m) for m in await rows.messages(r, contact_id)]
            view["claims"] = [
                {"role_id": role_id, **self._claim(claim, now)}
                for role_id in sorted(ours & set(view["parties"].values()))
                if (claim := await claim_rows.get(r, contact_id, role_id)) is not None
            ]
            return view

        return await self._db.read(load)

    @staticmethod
    async def _summary(
        r: Queryable, contact: dict[str, Any], ours: set[str], now: int
    ) -> dict[str, Any]:
        side = contact["opener_role_id"] if contact["opener_role_id"] in ours else None
        side = side or contact["recipient_role_id"]
        view = await communication_view(r, contact, side, now)
        return {
            "object": "comms.contact",
            "id": contact["id"],
            "state": view["state"],
            "parties": {
                "opener": contact["opener_role_id"],
                "recipient": contact["recipient_role_id"],
            },
            "ours": sorted(ours & {contact["opener_role_id"], contact["recipient_role_id"]}),
            "accepted": view["accepted"],
            "reply_limit": view["reply_limit"],
            "replies_used": view["replies_used"],
            "replies_remaining": view["replies_remaining"],
            "created_at": contact["created_at"],
            "expires_at": contact["expires_at"],
            "closed_at": contact["closed_at"],
            "closed_by_role_id": contact["closed_by_role_id"],
            "server_time": now,
        }

    @staticmethod
    def _claim(claim: dict[str, Any], now: int) -> dict[str, Any]:
        return {
            "state": shown_state(claim, now),
            "phase": claim["phase"],
            "through_seq": claim["through_seq"],
            "handled_seq": claim["handled_seq"],
            "lease_epoch": claim["lease_epoch"],
            "lease_expires_at": claim["lease_expires_at"],
        }
