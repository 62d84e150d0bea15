"""Every turn status change orchestration makes, checked against the one transition
table (`allinone.core.states.TURN_TRANSITIONS`) before it is written as a
compare-and-set.

A move names the statuses it may start from; each must be allowed by the table to reach
the target, or `IllegalTransition` is raised before anything is written (a programming
error, not a race). The one exception is re-entering `waiting` from `waiting`: another
pending action was added to a turn that already waits, and the row's `state_version`
records that change although the status stays.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from allinone.core.states import TurnStatus, check_turn_transition, sources_for
from storage import turns
from storage.database import Tx

# Same-status moves that are allowed (see the module docstring).
_REENTRY = frozenset({TurnStatus.WAITING})


def sources(target: TurnStatus, starts: Iterable[TurnStatus] | None = None) -> tuple[str, ...]:
    """The statuses a move to `target` starts from: `starts`, each checked against the
    table, or when omitted every status the table allows."""
    if starts is None:
        return sources_for(target)
    checked = []
    for start in starts:
        if not (start is target and target in _REENTRY):
            check_turn_transition(start, target)
        checked.append(start.value)
    return tuple(checked)


async def move(
    tx: Tx,
    turn_id: str,
    target: TurnStatus,
    starts: Iterable[TurnStatus] | None = None,
    *,
    fencing_token: str | None = None,
    fields: dict[str, Any] | None = None,
    uncancelled: bool = False,
) -> bool:
    """Compare-and-set the turn to `target` from one of `starts` (see `sources`), and
    only while it carries `fencing_token` when one is given (and, when `uncancelled`,
    while no cancellation of it was requested); whether it moved."""
    return await turns.transition(
        tx,
        turn_id,
        sources(target, starts),
        target,
        fencing_token=fencing_token,
        fields=fields,
        uncancelled=uncancelled,
    )
