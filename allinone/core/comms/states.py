"""The communication lifecycles, each with its allowed transitions in one place.

Contact:  open -> accepted -> closed;  open -> closed   (closed never reopens; expiry is
          a matter of time, 7 days after creation, and needs no transition)
Claim:    leased -> leased (processing) | waiting_owner | failed | done
          waiting_owner, failed -> leased   only by a claim with resume + owner_confirmed
          done -> leased                    a new lease for a new watermark
          every state may repeat itself (a retried progress report)
Progress phases map onto claim states: processing -> leased, waiting_owner ->
waiting_owner, failed -> failed, waiting_reply and completed -> done (the watermark is
handled and becomes the role's handled_seq). A lease whose time is up is answered as
`expired` (`shown_state`), though nothing stored changes until the next claim.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Any

from allinone.core.comms.errors import IllegalTransition


class ContactState(StrEnum):
    OPEN = "open"
    ACCEPTED = "accepted"
    CLOSED = "closed"


CONTACT_TRANSITIONS: dict[ContactState, frozenset[ContactState]] = {
    ContactState.OPEN: frozenset({ContactState.ACCEPTED, ContactState.CLOSED}),
    ContactState.ACCEPTED: frozenset({ContactState.CLOSED}),
    ContactState.CLOSED: frozenset(),
}


def check_contact(current: str, target: ContactState) -> None:
    if target not in CONTACT_TRANSITIONS[ContactState(current)]:
        raise IllegalTransition("contact", current, target)


class ClaimState(StrEnum):
    LEASED = "leased"
    WAITING_OWNER = "waiting_owner"
    FAILED = "failed"
    DONE = "done"


CLAIM_TRANSITIONS: dict[ClaimState, frozenset[ClaimState]] = {
    ClaimState.LEASED: frozenset(
        {ClaimState.LEASED, ClaimState.WAITING_OWNER, ClaimState.FAILED, ClaimState.DONE}
    ),
    ClaimState.WAITING_OWNER: frozenset({ClaimState.WAITING_OWNER, ClaimState.LEASED}),
    ClaimState.FAILED: frozenset({ClaimState.FAILED, ClaimState.LEASED}),
    ClaimState.DONE: frozenset({ClaimState.DONE, ClaimState.LEASED}),
}

# What a claim whose lease ran out is answered as: no executor holds it, and a new claim
# competes for it (a renewal of the old lease is refused `TASK_LEASE_EXPIRED`).
EXPIRED = "expired"


def shown_state(claim: Mapping[str, Any], now: int) -> str:
    """A claim's state as the API answers it: `expired` once a lease's time is up."""
    if claim["state"] == ClaimState.LEASED and now >= claim["lease_expires_at"]:
        return EXPIRED
    return str(claim["state"])


# States a new lease may leave only with resume:true and owner_confirmed:true.
NEEDS_OWNER = frozenset({ClaimState.WAITING_OWNER, ClaimState.FAILED})


def check_claim(current: str, target: ClaimState) -> None:
    if target not in CLAIM_TRANSITIONS[ClaimState(current)]:
        raise IllegalTransition("claim", current, target)


def check_progress(current: str, target: ClaimState) -> None:
    """A progress report moves a claim like a transition, except that only a new lease
    (a claim) may re-enter `leased` from another state."""
    if target is ClaimState.LEASED and current != ClaimState.LEASED:
        raise IllegalTransition("claim", current, target)
    check_claim(current, target)


class Phase(StrEnum):
    PROCESSING = "processing"
    WAITING_OWNER = "waiting_owner"
    WAITING_REPLY = "waiting_reply"
    COMPLETED = "completed"
    FAILED = "failed"


PHASE_STATE: dict[Phase, ClaimState] = {
    Phase.PROCESSING: ClaimState.LEASED,
    Phase.WAITING_OWNER: ClaimState.WAITING_OWNER,
    Phase.WAITING_REPLY: ClaimState.DONE,
    Phase.COMPLETED: ClaimState.DONE,
    Phase.FAILED: ClaimState.FAILED,
}
