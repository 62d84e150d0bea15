"""The interaction lifecycle, in one place: a permission request, a user choice or a
client-executed function call, from the request to its settled decision.

    PENDING    -> DELIVERING | WITHDRAWN
    DELIVERING -> APPLIED     (receipt applied: true)
                | REJECTED    (refused with a finite code; another decision may follow)
                | WITHDRAWN   (`not_pending`, or a `permission_cancel` raced the decision)
                | UNKNOWN     (no receipt within 15 s, or the connection closed)
    REJECTED   -> DELIVERING | WITHDRAWN
    UNKNOWN    -> DELIVERING | WITHDRAWN    (an explicit retry, never automatic)
    APPLIED, WITHDRAWN: terminal

Every delivery uses a fresh delivery id; only the receipt echoing the outstanding one
moves the interaction. `not_pending` means the Runtime no longer holds the interaction
(WITHDRAWN). Nothing here retries: an UNKNOWN decision is re-delivered only when the
caller decides to, and the Runtime's applied-receipt cache answers an identical replay.
"""

from __future__ import annotations

from enum import StrEnum

from runtime.proto.errors import DecisionErrorCode, LifecycleErrorCode, ValidationError
from runtime.proto.interactions import InteractionDecisionAck


class InteractionKind(StrEnum):
    PERMISSION = "permission"  # interaction id = permission_request.request_id
    USER_CHOICE = "user_choice"  # interaction id = prompt_for_user_choice.ask_id
    FUNCTION_CALL = "function_call"  # interaction id = function_call.call_id


class InteractionState(StrEnum):
    PENDING = "pending"  # requested; awaiting a decision
    DELIVERING = "delivering"  # a decision was sent; awaiting its receipt
    APPLIED = "applied"  # the receipt proved the decision settled
    REJECTED = "rejected"  # the last decision was refused; another may be delivered
    UNKNOWN = "unknown"  # no receipt: the decision may or may not have applied
    WITHDRAWN = "withdrawn"  # the Runtime withdrew the request or no longer holds it


TERMINAL_INTERACTION_STATES = frozenset({InteractionState.APPLIED, InteractionState.WITHDRAWN})

INTERACTION_TRANSITIONS: dict[InteractionState, frozenset[InteractionState]] = {
    InteractionState.PENDING: frozenset({InteractionState.DELIVERING, InteractionState.WITHDRAWN}),
    InteractionState.DELIVERING: frozenset(
        {
            InteractionState.APPLIED,
            InteractionState.REJECTED,
            InteractionState.UNKNOWN,
            InteractionState.WITHDRAWN,
        }
    ),
    InteractionState.REJECTED: frozenset({InteractionState.DELIVERING, InteractionState.WITHDRAWN}),
    InteractionState.UNKNOWN: frozenset({InteractionState.DELIVERING, InteractionState.WITHDRAWN}),
    InteractionState.APPLIED: frozenset(),
    InteractionState.WITHDRAWN: frozenset(),
}


class IllegalInteractionTransition(ValidationError):
    def __init__(self, current: InteractionState, target: InteractionState) -> None:
        super().__init__(
            LifecycleErrorCode.INVALID_TRANSITION,
            f"interaction cannot move {current} -> {target}",
        )
        self.current = current
        self.target = target


def check_interaction_transition(current: InteractionState, target: InteractionState) -> None:
    if target not in INTERACTION_TRANSITIONS[current]:
        raise IllegalInteractionTransition(current, target)


class Interaction:
    """One interaction of one Run, tracked by the side that delivers decisions (Core).

    Call `deliver()` before sending each decision, then `acknowledge()` with its
    receipt, or `lose()` when the 15 s receipt wait ends or the connection closes.
    `withdraw()` records a `permission_cancel` or the end of the Run.
    """

    def __init__(self, kind: InteractionKind, interaction_id: str, run_id: str) -> None:
        self.kind = kind
        self.interaction_id = interaction_id
        self.run_id = run_id
        self.state = InteractionState.PENDING
        self.delivery_id = ""  # the outstanding or last delivery
        self.error_code = ""  # the code of the last refusal
        self._deliveries: set[str] = set()

    @property
    def terminal(self) -> bool:
        return self.state in TERMINAL_INTERACTION_STATES

    def _move(self, target: InteractionState) -> None:
        check_interaction_transition(self.state, target)
        self.state = target

    def deliver(self, delivery_id: str) -> None:
        """Record a decision delivery; a delivery id is never reused."""
        if not delivery_id or delivery_id in self._deliveries:
            raise ValidationError(DecisionErrorCode.DECISION_CONFLICT, "delivery id was used")
        self._move(InteractionState.DELIVERING)
        self._deliveries.add(delivery_id)
        self.delivery_id = delivery_id
        self.error_code = ""

    def acknowledge(self, ack: InteractionDecisionAck) -> InteractionState:
        """Apply the receipt of the outstanding delivery and return the new state.

        Raises IllegalInteractionTransition when no delivery is outstanding, and
        ValidationError(`invalid_receipt`) for a receipt of another delivery or a
        contradictory one; in both cases the state is unchanged.
        """
        if self.state is not InteractionState.DELIVERING:
            raise IllegalInteractionTransition(self.state, InteractionState.APPLIED)
        ack.check(self.delivery_id)
        if ack.applied:
            self._move(InteractionState.APPLIED)
        elif ack.error_code == DecisionErrorCode.NOT_PENDING:
            self._move(InteractionState.WITHDRAWN)
        else:
            self._move(InteractionState.REJECTED)
        self.error_code = ack.error_code
        return self.state

    def lose(self) -> None:
        """No receipt arrived in time or the connection closed: the outcome is unknown."""
        self._move(InteractionState.UNKNOWN)

    def withdraw(self) -> None:
        self._move(InteractionState.WITHDRAWN)
