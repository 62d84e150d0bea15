"""The lifecycles of Core's durable records, each in one place.

Turn:   queued -> in_progress -> waiting -> completed | failed | cancelled
        (queued may also end failed or cancelled; terminal never reopens)
Session status is derived, never stored: idle, in_progress, requires_action, failed.
        A turn that failed or was cancelled leaves the session `idle` (the error is on
        the turn); the session is `failed` only when it can never run again, because
        its environment could not be prepared.
Item:   in_progress -> completed | incomplete (| failed for calls)
"""

from __future__ import annotations

from enum import StrEnum

from allinone.core.errors import CoreError


class TurnStatus(StrEnum):
    QUEUED = "queued"
    IN_PROGRESS = "in_progress"
    WAITING = "waiting"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"


ACTIVE_TURN = frozenset({TurnStatus.QUEUED, TurnStatus.IN_PROGRESS, TurnStatus.WAITING})
TERMINAL_TURN = frozenset({TurnStatus.COMPLETED, TurnStatus.FAILED, TurnStatus.CANCELLED})

TURN_TRANSITIONS: dict[TurnStatus, frozenset[TurnStatus]] = {
    TurnStatus.QUEUED: frozenset({TurnStatus.IN_PROGRESS, TurnStatus.FAILED, TurnStatus.CANCELLED}),
    TurnStatus.IN_PROGRESS: frozenset(
        {TurnStatus.WAITING, TurnStatus.COMPLETED, TurnStatus.FAILED, TurnStatus.CANCELLED}
    ),
    TurnStatus.WAITING: frozenset(
        {TurnStatus.IN_PROGRESS, TurnStatus.COMPLETED, TurnStatus.FAILED, TurnStatus.CANCELLED}
    ),
    TurnStatus.COMPLETED: frozenset(),
    TurnStatus.FAILED: frozenset(),
    TurnStatus.CANCELLED: frozenset(),
}


class IllegalTransition(CoreError):
    def __init__(self, current: str, target: str) -> None:
        super().__init__(f"turn cannot move from {current} to {target}")
        self.current = current
        self.target = target


def sources_for(target: TurnStatus) -> tuple[str, ...]:
    """The statuses a compare-and-set to `target` may start from."""
    return tuple(sorted(s.value for s, allowed in TURN_TRANSITIONS.items() if target in allowed))


def check_turn_transition(current: str, target: TurnStatus) -> None:
    if target not in TURN_TRANSITIONS[TurnStatus(current)]:
        raise IllegalTransition(current, target)


class SessionStatus(StrEnum):
    IDLE = "idle"
    IN_PROGRESS = "in_progress"
    REQUIRES_ACTION = "requires_action"
    FAILED = "failed"


def session_status(
    latest_turn_status: str | None, pending_actions: int, environment_failed: bool = False
) -> SessionStatus:
    """Derive the session status from its latest root turn, its pending required actions
    and whether its environment failed to prepare (the only way a session fails)."""
    if latest_turn_status is None:
        return SessionStatus.FAILED if environment_failed else SessionStatus.IDLE
    status = TurnStatus(latest_turn_status)
    if status in TERMINAL_TURN and environment_failed:
        return SessionStatus.FAILED
    if status in TERMINAL_TURN:
        return SessionStatus.IDLE
    if status is TurnStatus.WAITING and pending_actions:
        return SessionStatus.REQUIRES_ACTION
    return SessionStatus.IN_PROGRESS


class ItemStatus(StrEnum):
    IN_PROGRESS = "in_progress"
    COMPLETED = "completed"
    INCOMPLETE = "incomplete"
    FAILED = "failed"
