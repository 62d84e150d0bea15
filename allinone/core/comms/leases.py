"""The lease check every write on a claimed contact passes.

Once a role has claimed a contact, reply, close, accept and progress from that role need
the current lease (X-A2A-Task-Lease) and its epoch (X-A2A-Task-Epoch), unexpired and
granted under the role's current primary epoch. There is no way around it: the check
runs inside the write's transaction. Lease ids are compared as SHA-256 digests.

A lease is live while its claim is `leased`, unexpired and granted under the role's
current primary epoch; only a live lease excludes others. Closing, which either party
may always do, needs the lease only while one is live: a role whose lease expired, or
whose executor finished or handed the task to the owner, closes without one.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from allinone.core.comms.errors import PreconditionRequired, Rejected
from storage import comms_claims as claim_rows
from storage.database import Tx


def lease_digest(lease_id: str) -> str:
    return hashlib.sha256(lease_id.encode()).hexdigest()


@dataclass(frozen=True)
class LeaseHeaders:
    lease_id: str | None = None
    epoch: int | None = None


async def require_lease(
    tx: Tx, contact_id: str, role: dict[str, Any], lease: LeaseHeaders, now: int
) -> dict[str, Any] | None:
    """Return the role's claim on the contact after checking the caller's lease against
    it, or None when the role has never claimed the contact (no lease needed)."""
    claim = await claim_rows.get(tx, contact_id, role["id"])
    if claim is None:
        return None
    if lease.lease_id is None or lease.epoch is None:
        raise PreconditionRequired(
            "Your role has claimed this contact; send X-A2A-Task-Lease and X-A2A-Task-Epoch.",
            code="TASK_LEASE_REQUIRED",
        )
    if lease.epoch != claim["lease_epoch"]:
        raise Rejected(
            f"The lease epoch is now {claim['lease_epoch']}; this lease is stale.",
            code="TASK_LEASE_EPOCH_STALE",
        )
    if lease_digest(lease.lease_id) != claim["lease_digest"]:
        raise Rejected("This is not the contact's current lease.", code="TASK_LEASE_INVALID")
    if claim["primary_epoch"] != role["primary_epoch"]:
        raise Rejected(
            "The lease was granted under an earlier primary epoch; verify and claim again.",
            code="TASK_LEASE_INVALID",
        )
    if now >= claim["lease_expires_at"]:
        raise Rejected(
            "The lease has expired; claim again with a new lease_id.", code="TASK_LEASE_EXPIRED"
        )
    return claim


def is_live(claim: dict[str, Any], role: dict[str, Any], now: int) -> bool:
    """Whether an executor holds the claim now: leased, unexpired and granted under the
    role's current primary epoch (a primary switch voids the old primary's lease)."""
    return bool(
        claim["state"] == "leased"
        and now < claim["lease_expires_at"]
        and claim["primary_epoch"] == role["primary_epoch"]
    )


async def require_lease_to_close(
    tx: Tx, contact_id: str, role: dict[str, Any], lease: LeaseHeaders, now: int
) -> None:
    """Closing needs the current lease only while an executor holds a live one."""
    claim = await claim_rows.get(tx, contact_id, role["id"])
    if claim is None or not is_live(claim, role, now):
        return
    await require_lease(tx, contact_id, role, lease, now)
