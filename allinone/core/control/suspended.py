"""Turns that no Run holds: suspended for a re-claim (`resuming`) or `paused`.

Such a turn has no lease and no device; a cancellation ends it at once (nothing is in
flight: it was suspended only at a checkpoint with nothing started since).
"""

from __future__ import annotations

from typing import Any

from allinone.core.recorder import Recorder
from allinone.core.states import TurnStatus
from storage import commands, interactions, leases, turns
from storage.database import Tx

SUSPENDED_PHASES = frozenset({"resuming", "paused"})


def is_suspended(row: dict[str, Any]) -> bool:
    return (
        row["status"] in (TurnStatus.IN_PROGRESS, TurnStatus.WAITING)
        and row.get("phase") in SUSPENDED_PHASES
    )


async def cancel_suspended(tx: Tx, recorder: Recorder, row: dict[str, Any], now: int) -> bool:
    """Cancel a suspended turn now; whether it moved (False when it is no longer
    suspended: a Run claimed it meanwhile)."""
    if not is_suspended(row):
        return False
    turn_id = str(row["id"])
    moved = await turns.transition(
        tx,
        turn_id,
        (row["status"],),
        TurnStatus.CANCELLED,
        fields={
            "cancel_requested_at": now,
            "completed_at": now,
            "phase": "settled",
            "lease_expires_at": None,
        },
    )
    if not moved:
        return False
    await interactions.withdraw_open(tx, turn_id)
    await leases.interrupt_items(tx, turn_id)
    await recorder.emit_turn(tx, "agent.session.turn.cancelled", turn_id, terminal=True)
    await recorder.emit_session_activity(tx, str(row["session_id"]))
    await commands.settle_terminal(tx, turn_id, TurnStatus.CANCELLED.value, now)
    return True
