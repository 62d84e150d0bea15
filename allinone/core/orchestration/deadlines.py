"""A turn's deadline (`x_corebox.turn_deadline_seconds` of its session), kept in the
turn's row so that no restart starts it again.

The deadline counts the turn's running time from its first claim, not the time it was
queued: `deadline_at_ms` (Unix milliseconds) is set at the first claim and carried over
every re-claim, so the time a turn waits to be re-claimed after a restart, a drain or a
lost Runtime counts (the turn was running as far as its user knows). A pause stops it:
when the pause applies, `deadline_left_ms` keeps the running time the turn had left
(`storage.checkpoints.suspend`), and the re-claim after the resume sets a new
`deadline_at_ms` from it. A turn found past its deadline when it is to be re-claimed is
failed `turn_deadline_exceeded` (`Outcomes.deadline_passed`) without starting it again:
by the queue, which looks at suspended turns whether or not a Runtime can take them, and
by the re-claim itself.
"""

from __future__ import annotations

from typing import Any

from allinone.core.orchestration.outcomes import RESUMING, Outcomes
from storage import execution_settings, turns
from storage.database import Tx


def seconds_of(session: dict[str, Any]) -> int | float | None:
    """The session's per-turn deadline in seconds, or None when it has none."""
    seconds = execution_settings.settings_of(session).get("turn_deadline_seconds")
    if isinstance(seconds, bool) or not isinstance(seconds, int | float) or seconds <= 0:
        return None
    return seconds


def first(session: dict[str, Any], now_ms: int) -> int | None:
    """The deadline of a turn claimed for the first time at `now_ms`."""
    seconds = seconds_of(session)
    return None if seconds is None else now_ms + int(seconds * 1000)


def carried(row: dict[str, Any], session: dict[str, Any], now_ms: int) -> int | None:
    """The deadline of a suspended turn re-claimed at `now_ms`: the one it had, or after
    a pause the running time it had left from now. A turn claimed before its row kept
    a deadline (an earlier build) gets its first one now."""
    left = row.get("deadline_left_ms")
    if left is not None:
        return now_ms + int(left)
    at = row.get("deadline_at_ms")
    if at is not None:
        return int(at)
    return first(session, now_ms)


def passed(deadline_ms: int | None, now_ms: int) -> bool:
    return deadline_ms is not None and deadline_ms <= now_ms


async def expire(
    tx: Tx, outcomes: Outcomes, turn_id: str, session: dict[str, Any], now_ms: int
) -> bool:
    """Fail the suspended turn `turn_id` (waiting to be re-claimed) when its deadline
    passed by `now_ms`; whether it was failed (not when it was claimed, paused or
    cancelled meanwhile)."""
    row = await turns.get(tx, turn_id)
    if row is None or row.get("phase") != RESUMING or row["cancel_requested_at"]:
        return False
    if not passed(carried(row, session, now_ms), now_ms):
        return False
    return await outcomes.deadline_passed(tx, row)
