"""Claims: one row per (contact, role) holding the current lease (as a digest), its epoch,
the claimed watermark, the role-level `handled_seq` and the last progress phase.

Every lease digest ever granted for a (contact, role) is kept in `comms_retired_leases`
until retention, so an old lease id can never be granted again. Updates are
compare-and-set on the lease epoch.
"""

from __future__ import annotations

from typing import Any

from storage.database import Tx
from storage.rows import Queryable, record


async def get(q: Queryable, contact_id: str, role_id: str) -> dict[str, Any] | None:
    row = await q.fetchone(
        "SELECT * FROM comms_claims WHERE contact_id = ? AND role_id = ?", (contact_id, role_id)
    )
    return record(row)


async def was_granted(q: Queryable, contact_id: str, role_id: str, lease_digest: str) -> bool:
    row = await q.fetchone(
        "SELECT 1 FROM comms_retired_leases WHERE contact_id = ? AND role_id = ?"
        " AND lease_digest = ?",
        (contact_id, role_id, lease_digest),
    )
    return row is not None


async def grant(tx: Tx, row: dict[str, Any], expected_epoch: int | None) -> bool:
    """Install a new lease. `expected_epoch` None means no claim row exists yet; otherwise
    the row must still be at that epoch. False when the compare-and-set lost."""
    await tx.execute(
        "INSERT INTO comms_retired_leases (contact_id, role_id, lease_digest) VALUES (?, ?, ?)"
        " ON CONFLICT DO NOTHING",
        (row["contact_id"], row["role_id"], row["lease_digest"]),
    )
    if expected_epoch is None:
        await tx.execute(
            "INSERT INTO comms_claims (contact_id, role_id, state, lease_digest, lease_epoch,"
            " lease_expires_at, through_seq, instance_id, primary_epoch, updated_at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                row["contact_id"],
                row["role_id"],
                row["state"],
                row["lease_digest"],
                row["lease_epoch"],
                row["lease_expires_at"],
                row["through_seq"],
                row["instance_id"],
                row["primary_epoch"],
                row["updated_at"],
            ),
        )
        return True
    changed = await tx.execute(
        "UPDATE comms_claims SET state = ?, lease_digest = ?, lease_epoch = ?,"
        " lease_expires_at = ?, through_seq = ?, instance_id = ?, primary_epoch = ?,"
        " updated_at = ? WHERE contact_id = ? AND role_id = ? AND lease_epoch = ?",
        (
            row["state"],
            row["lease_digest"],
            row["lease_epoch"],
            row["lease_expires_at"],
            row["through_seq"],
            row["instance_id"],
            row["primary_epoch"],
            row["updated_at"],
            row["contact_id"],
            row["role_id"],
            expected_epoch,
        ),
    )
    return changed == 1


async def renew(
    tx: Tx, contact_id: str, role_id: str, epoch: int, expires_at: int, now: int
) -> bool:
    changed = await tx.execute(
        "UPDATE comms_claims SET lease_expires_at = ?, updated_at = ?"
        " WHERE contact_id = ? AND role_id = ? AND lease_epoch = ?",
        (expires_at, now, contact_id, role_id, epoch),
    )
    return changed == 1


async def record_progress(
    tx: Tx,
    contact_id: str,
    role_id: str,
    epoch: int,
    *,
    current: str,
    state: str,
    phase: str,
    through_seq: int,
    handled_seq: int,
    now: int,
) -> bool:
    """Move the claim from `current` to `state` at `epoch`, recording the phase."""
    changed = await tx.execute(
        "UPDATE comms_claims SET state = ?, phase = ?, phase_through_seq = ?, phase_at = ?,"
        " handled_seq = MAX(handled_seq, ?), updated_at = ?"
        " WHERE contact_id = ? AND role_id = ? AND lease_epoch = ? AND state = ?",
        (state, phase, through_seq, now, handled_seq, now, contact_id, role_id, epoch, current),
    )
    return changed == 1
