"""A turn's latest checkpoint and what is in flight since it (seed 003).

A checkpoint is written in the transaction that projects the Run's `checkpoint` frame,
after every frame the Run sent before it, and only while the writer still holds the
turn's fencing token. The first frame after it that starts an operation records that
operation in `inflight_operation`; a later checkpoint clears it. A turn whose latest
checkpoint has nothing in flight can continue from it on a new Run.
"""

from __future__ import annotations

from typing import Any

from storage.database import Tx
from storage.rows import Queryable


async def commit(
    tx: Tx,
    turn_id: str,
    fencing_token: str,
    boundary: str,
    cursor: str,
    journal_seq: int,
    now: int,
) -> bool:
    """Record the checkpoint; False (nothing written) when the token was superseded."""
    changed = await tx.execute(
        "UPDATE turns SET checkpoint_boundary = ?, checkpoint_cursor = ?,"
        " checkpoint_journal_seq = ?, checkpoint_token = ?, checkpoint_at = ?,"
        " inflight_operation = NULL"
        " WHERE id = ? AND fencing_token = ? AND status IN ('in_progress', 'waiting')",
        (boundary, cursor, journal_seq, fencing_token, now, turn_id, fencing_token),
    )
    return changed == 1


async def started(tx: Tx, turn_id: str, fencing_token: str, operation: str) -> None:
    """The Run started `operation` after its latest checkpoint (the first one is kept)."""
    await tx.execute(
        "UPDATE turns SET inflight_operation = ? WHERE id = ? AND fencing_token = ?"
        " AND inflight_operation IS NULL",
        (operation, turn_id, fencing_token),
    )


async def resumable(q: Queryable) -> list[dict[str, Any]]:
    """Running turns marked to continue from their checkpoint, oldest first."""
    rows = await q.fetchall(
        "SELECT * FROM turns_full WHERE status IN ('in_progress', 'waiting')"
        " AND phase = 'resuming'"
        " ORDER BY id"
    )
    return [dict(row) for row in rows]


def restorable(row: dict[str, Any]) -> bool:
    """Whether the turn can continue from its latest checkpoint: there is one, it was
    written under the turn's current claim, nothing started since, and the pinned
    configuration is the one the checkpoint was taken with (restore validation)."""
    return bool(
        row.get("checkpoint_cursor")
        and row.get("inflight_operation") is None
        and row.get("checkpoint_token") == row.get("fencing_token")
        and row.get("checkpoint_config_digest") == row.get("config_digest")
    )


async def deliveries_in_flight(q: Queryable, turn_id: str) -> str | None:
    """The first input Core was delivering to the turn's Run whose outcome is unknown (a
    function result, a decision or a steering message), named; None when there is none."""
    row = await q.fetchone(
        "SELECT call_id FROM function_calls WHERE turn_id = ?"
        " AND delivery_state IN ('delivering', 'unknown') LIMIT 1",
        (turn_id,),
    )
    if row is not None:
        return f"the delivery of the function result for {row['call_id']}"
    row = await q.fetchone(
        "SELECT interaction_id FROM interactions WHERE turn_id = ?"
        " AND state IN ('delivering', 'unknown') LIMIT 1",
        (turn_id,),
    )
    if row is not None:
        return f"the delivery of the decision for {row['interaction_id']}"
    row = await q.fetchone(
        "SELECT seq FROM turn_inputs WHERE turn_id = ? AND kind = 'message'"
        " AND state IN ('delivered', 'written', 'unknown') LIMIT 1",
        (turn_id,),
    )
    if row is not None:
        return f"the delivery of steering input {row['seq']}"
    return None


async def suspend(
    tx: Tx,
    turn_id: str,
    phase: str,
    fencing_token: str | None,
    expected_version: int | None,
    now_ms: int,
) -> bool:
    """Release the turn's claim without ending it: no lease, no device, `phase` set
    (`resuming` to be re-claimed, `paused` to wait for a resume). Compare-and-set on the
    fencing token and, when given, the state version. A pause stops the turn's deadline:
    `paused` keeps the running time it had left at `now_ms` (none once it passed), unless
    it kept it already (a pause again before its re-claim); `resuming` leaves the
    deadline running."""
    sql = (
        "UPDATE turns SET phase = ?, lease_expires_at = NULL, device_id = NULL,"
        " state_version = state_version + 1"
    )
    args: list[Any] = [phase]
    if phase == "paused":
        sql += (
            ", deadline_left_ms = COALESCE(deadline_left_ms, CASE"
            " WHEN deadline_at_ms IS NULL THEN NULL"
            " WHEN deadline_at_ms > ? THEN deadline_at_ms - ? ELSE 0 END)"
        )
        args += [now_ms, now_ms]
    sql += " WHERE id = ? AND status IN ('in_progress', 'waiting')"
    args.append(turn_id)
    if fencing_token is not None:
        sql += " AND fencing_token = ?"
        args.append(fencing_token)
    if expected_version is not None:
        sql += " AND state_version = ?"
        args.append(expected_version)
    return await tx.execute(sql, args) == 1


async def set_phase(tx: Tx, turn_id: str, phase: str, fencing_token: str | None) -> bool:
    """Move a running turn's phase (state version bumped); fenced when a token is given."""
    sql = (
        "UPDATE turns SET phase = ?, state_version = state_version + 1"
        " WHERE id = ? AND status IN ('in_progress', 'waiting')"
    )
    args: list[Any] = [phase, turn_id]
    if fencing_token is not None:
        sql += " AND fencing_token = ?"
        args.append(fencing_token)
    return await tx.execute(sql, args) == 1


async def reclaim(
    tx: Tx,
    turn_id: str,
    expected_version: int,
    fields: dict[str, Any],
) -> bool:
    """Claim a suspended turn (phase `resuming`) for a new worker: compare-and-set on its
    state version; the status stays what it was."""
    sets = ", ".join(f"{column} = ?" for column in fields)
    changed = await tx.execute(
        f"UPDATE turns SET {sets}, state_version = state_version + 1"
        " WHERE id = ? AND status IN ('in_progress', 'waiting') AND phase = 'resuming'"
        " AND state_version = ?",
        (*fields.values(), turn_id, expected_version),
    )
    return changed == 1


async def set_phase_at(
    tx: Tx, turn_id: str, phase: str | None, expected_version: int, statuses: tuple[str, ...]
) -> bool:
    """Compare-and-set the phase of a turn in one of `statuses` at `expected_version` (a
    control command's change); the state version is bumped."""
    marks = ", ".join("?" for _ in statuses)
    changed = await tx.execute(
        "UPDATE turns SET phase = ?, state_version = state_version + 1"
        f" WHERE id = ? AND state_version = ? AND status IN ({marks})",
        (phase, turn_id, expected_version, *statuses),
    )
    return changed == 1
