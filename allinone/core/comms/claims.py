"""Claims and progress: who may act on a contact's inbound messages, and how far.

`claim` grants a LEASE_SECONDS lease on a watermark (`through_seq`, an inbound event of
the contact in the role's stream) to the role's primary instance. A retry with the same
lease is safe; `renew` extends it while it is valid; another lease while one is valid
gets TASK_BUSY (a lease granted under an earlier primary epoch is void and blocks no
one); a new lease increments `lease_epoch` (compare-and-set), so an earlier
executor's writes are refused. A watermark at or below the role's `handled_seq` gets
TASK_ALREADY_HANDLED; leaving waiting_owner or failed needs resume and owner_confirmed.
`progress` reports a phase for exactly the claimed watermark; waiting_reply and completed
make it the role's `handled_seq`. On a contact that either side closed, or that expired,
claim, renewal and progress all get CONTACT_CLOSED: nothing more can be done there.
The transitions themselves are in states.py.
"""

from __future__ import annotations

from typing import Any

from allinone.core.comms.contacts import check_writable, member_contact
from allinone.core.comms.errors import CommsError, PreconditionRequired, Rejected
from allinone.core.comms.events import emit
from allinone.core.comms.identities import Caller, writer_role
from allinone.core.comms.leases import LeaseHeaders, is_live, lease_digest, require_lease
from allinone.core.comms.limits import LEASE_ID, LEASE_SECONDS
from allinone.core.comms.models import Claim, Progress
from allinone.core.comms.states import (
    NEEDS_OWNER,
    PHASE_STATE,
    ClaimState,
    Phase,
    check_claim,
    check_progress,
)
from allinone.core.ids import Clock, Ids
from storage import comms_claims as rows
from storage import comms_events as event_rows
from storage.database import Database, Tx


def render_claim(claim: dict[str, Any], now: int) -> dict[str, Any]:
    return {
        "object": "contact.claim",
        "contact_id": claim["contact_id"],
        "state": claim["state"],
        "lease_epoch": claim["lease_epoch"],
        "lease_expires_at": claim["lease_expires_at"],
        "lease_seconds": LEASE_SECONDS,
        "through_seq": claim["through_seq"],
        "handled_seq": claim["handled_seq"],
        "phase": claim["phase"],
        "server_time": now,
    }


def _stale(current: int) -> Rejected:
    return Rejected(
        f"The lease epoch is now {current}; this executor is stale.",
        code="TASK_LEASE_EPOCH_STALE",
        param="expected_lease_epoch",
    )


class Claims:
    def __init__(self, db: Database, ids: Ids, clock: Clock) -> None:
        self._db = db
        self._ids = ids
        self._clock = clock

    async def claim(self, caller: Caller, contact_id: str, body: Claim) -> dict[str, Any]:
        _check_claim_body(body)
        digest = lease_digest(body.lease_id)
        now = self._clock.now()

        async def job(tx: Tx) -> dict[str, Any]:
            role = await writer_role(tx, caller, primary_only=True)
            await _claimable(tx, contact_id, role["id"], body.through_seq, now)
            claim = await rows.get(tx, contact_id, role["id"])
            if claim is not None and claim["lease_digest"] == digest:
                return await self._same_lease(tx, claim, role, body, now)
            if body.renew:
                raise Rejected("Only the current lease can be renewed.", code="TASK_LEASE_INVALID")
            if await rows.was_granted(tx, contact_id, role["id"], digest):
                raise Rejected(
                    "This lease_id was used before; claim with a new random lease_id.",
                    code="TASK_LEASE_REUSED",
                    param="lease_id",
                )
            epoch = 0 if claim is None else int(claim["lease_epoch"])
            if body.expected_lease_epoch is not None and body.expected_lease_epoch != epoch:
                raise _stale(epoch)
            if claim is not None:
                self._check_competition(claim, role, body, now)
            granted = {
                "contact_id": contact_id,
                "role_id": role["id"],
                "state": ClaimState.LEASED.value,
                "lease_digest": digest,
                "lease_epoch": epoch + 1,
                "lease_expires_at": now + LEASE_SECONDS,
                "through_seq": body.through_seq,
                "instance_id": caller.instance_id,
                "primary_epoch": role["primary_epoch"],
                "updated_at": now,
            }
            if not await rows.grant(tx, granted, None if claim is None else epoch):
                raise Rejected("Another executor holds this task.", code="TASK_BUSY")
            stored = await rows.get(tx, contact_id, role["id"])
            assert stored is not None
            return render_claim(stored, now)

        return await self._db.write(job)

    @staticmethod
    def _check_competition(
        claim: dict[str, Any], role: dict[str, Any], body: Claim, now: int
    ) -> None:
        if body.through_seq <= claim["handled_seq"]:
            raise Rejected(
                f"Events through seq {claim['handled_seq']} were already handled by this role.",
                code="TASK_ALREADY_HANDLED",
                param="through_seq",
            )
        state = ClaimState(claim["state"])
        if is_live(claim, role, now):
            raise Rejected(
                f"Another executor holds this task until {claim['lease_expires_at']}.",
                code="TASK_BUSY",
            )
        if state in NEEDS_OWNER and not (body.resume and body.owner_confirmed):
            raise Rejected(
                f"The task is {state.value}; resuming needs resume and owner_confirmed.",
                code="OWNER_CONFIRMATION_REQUIRED",
            )
        check_claim(state, ClaimState.LEASED)

    async def _same_lease(
        self, tx: Tx, claim: dict[str, Any], role: dict[str, Any], body: Claim, now: int
    ) -> dict[str, Any]:
        if (
            body.expected_lease_epoch is not None
            and body.expected_lease_epoch != claim["lease_epoch"]
        ):
            raise _stale(int(claim["lease_epoch"]))
        if claim["primary_epoch"] != role["primary_epoch"]:
            raise Rejected(
                "The lease was granted under an earlier primary epoch; claim with a new lease.",
                code="TASK_LEASE_INVALID",
            )
        if now >= claim["lease_expires_at"]:
            raise Rejected(
                "The lease has expired; compete again with a new lease_id.",
                code="TASK_LEASE_EXPIRED",
            )
        if body.through_seq != claim["through_seq"]:
            raise Rejected(
                "A lease covers one watermark; claim the next batch with a new lease.",
                code="TASK_WATERMARK_MISMATCH",
                param="through_seq",
            )
        if body.renew:
            expires = now + LEASE_SECONDS
            if not await rows.renew(
                tx, claim["contact_id"], role["id"], claim["lease_epoch"], expires, now
            ):
                raise _stale(int(claim["lease_epoch"]))
            claim = {**claim, "lease_expires_at": expires}
        return render_claim(claim, now)

    async def progress(
        self, caller: Caller, contact_id: str, body: Progress, lease: LeaseHeaders
    ) -> dict[str, Any]:
        now = self._clock.now()
        phase = Phase(body.phase)
        target = PHASE_STATE[phase]

        async def job(tx: Tx) -> dict[str, Any]:
            role = await writer_role(tx, caller, primary_only=True)
            contact = await member_contact(tx, contact_id, role["id"])
            check_writable(contact, now)
            claim = await require_lease(tx, contact_id, role, lease, now)
            if claim is None:
                raise PreconditionRequired(
                    "Claim the contact before reporting progress.", code="TASK_LEASE_REQUIRED"
                )
            if body.through_seq != claim["through_seq"]:
                raise Rejected(
                    f"Progress may be reported only for the claimed watermark"
                    f" {claim['through_seq']}.",
                    code="TASK_WATERMARK_MISMATCH",
                    param="through_seq",
                )
            check_progress(claim["state"], target)
            moved = await rows.record_progress(
                tx,
                contact_id,
                role["id"],
                claim["lease_epoch"],
                current=claim["state"],
                state=target.value,
                phase=phase.value,
                through_seq=body.through_seq,
                handled_seq=body.through_seq if target is ClaimState.DONE else 0,
                now=now,
            )
            if not moved:
                raise _stale(int(claim["lease_epoch"]))
            if claim["phase"] != phase or claim["phase_through_seq"] != body.through_seq:
                await emit(
                    tx,
                    self._ids,
                    contact,
                    role["id"],
                    "contact.progress",
                    now,
                    peer_payload={"phase": phase.value},
                )
            stored = await rows.get(tx, contact_id, role["id"])
            assert stored is not None
            return render_claim(stored, now)

        return await self._db.write(job)


def _check_claim_body(body: Claim) -> None:
    """The checks a claim request passes before any read: the lease id's shape, resume's
    owner confirmation and a renewal's expected epoch."""
    if not LEASE_ID.match(body.lease_id):
        raise CommsError(
            "lease_id must be 48 lower-case hex characters from 24 random bytes.",
            code="INVALID_LEASE_ID",
            param="lease_id",
        )
    if body.resume and not body.owner_confirmed:
        raise CommsError(
            "resume needs owner_confirmed: true.",
            code="OWNER_CONFIRMATION_REQUIRED",
            param="owner_confirmed",
        )
    if body.renew and body.expected_lease_epoch is None:
        raise CommsError("A renewal must carry expected_lease_epoch.", param="expected_lease_epoch")


async def _claimable(tx: Tx, contact_id: str, role_id: str, through_seq: int, now: int) -> None:
    """The contact is the role's, neither closed nor expired, and `through_seq` names one
    of its inbound events."""
    contact = await member_contact(tx, contact_id, role_id)
    check_writable(contact, now)
    event = await event_rows.at(tx, role_id, through_seq)
    if event is None or event["contact_id"] != contact_id or event["direction"] != "inbound":
        raise CommsError(
            "through_seq must be the seq of an inbound event of this contact.",
            code="INVALID_WATERMARK",
            param="through_seq",
        )
