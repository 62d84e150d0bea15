"""Communication roles and their instances (runtime tokens stored as SHA-256 digests).

A role owns one event stream: `last_seq` is its counter, `stream_id` names the current
numbering and `gap_through_seq` is the highest seq that retention has deleted. Each
instance keeps its own cursor (the highest seq it has receipted) and its receiver
self-report.
"""

from __future__ import annotations

from typing import Any

from storage.database import Tx
from storage.rows import Queryable, record


async def insert_role(tx: Tx, row: dict[str, Any]) -> None:
    await tx.execute(
        "INSERT INTO comms_roles (id, project_id, name, agent_id, stream_id, created_at)"
        " VALUES (?, ?, ?, ?, ?, ?)",
        (
            row["id"],
            row["project_id"],
            row["name"],
            row.get("agent_id"),
            row["stream_id"],
            row["created_at"],
        ),
    )


async def role(q: Queryable, role_id: str) -> dict[str, Any] | None:
    return record(await q.fetchone("SELECT * FROM comms_roles WHERE id = ?", (role_id,)))


async def live_role(q: Queryable, role_id: str) -> dict[str, Any] | None:
    """The role if its project is not archived: an archived project's roles neither act
    nor take new contacts."""
    row = await q.fetchone(
        "SELECT r.* FROM comms_roles r JOIN projects p ON p.id = r.project_id"
        " WHERE r.id = ? AND p.archived_at IS NULL",
        (role_id,),
    )
    return record(row)


async def project_role(q: Queryable, project_id: str, role_id: str) -> dict[str, Any] | None:
    row = await q.fetchone(
        "SELECT * FROM comms_roles WHERE project_id = ? AND id = ?", (project_id, role_id)
    )
    return record(row)


async def project_roles(q: Queryable, project_id: str, limit: int = 100) -> list[dict[str, Any]]:
    rows = await q.fetchall(
        "SELECT * FROM comms_roles WHERE project_id = ? ORDER BY created_at, id LIMIT ?",
        (project_id, limit),
    )
    return [r for r in (record(row) for row in rows) if r is not None]


async def role_for_agent(q: Queryable, agent_id: str) -> dict[str, Any] | None:
    return record(await q.fetchone("SELECT * FROM comms_roles WHERE agent_id = ?", (agent_id,)))


async def set_primary(tx: Tx, role_id: str, instance_id: str, expected_epoch: int) -> int | None:
    """Make `instance_id` primary if the epoch is still `expected_epoch`; return the new
    epoch, or None when the compare-and-set lost."""
    changed = await tx.execute(
        "UPDATE comms_roles SET primary_instance_id = ?, primary_epoch = primary_epoch + 1"
        " WHERE id = ? AND primary_epoch = ?",
        (instance_id, role_id, expected_epoch),
    )
    return expected_epoch + 1 if changed == 1 else None


async def rotate_stream(tx: Tx, role_id: str, expected: str, stream_id: str) -> bool:
    changed = await tx.execute(
        "UPDATE comms_roles SET stream_id = ? WHERE id = ? AND stream_id = ?",
        (stream_id, role_id, expected),
    )
    return changed == 1


async def next_seq(tx: Tx, role_id: str) -> int:
    await tx.execute("UPDATE comms_roles SET last_seq = last_seq + 1 WHERE id = ?", (role_id,))
    row = await tx.fetchone("SELECT last_seq FROM comms_roles WHERE id = ?", (role_id,))
    assert row is not None
    return int(row["last_seq"])


async def raise_gap(tx: Tx, role_id: str, seq: int) -> None:
    await tx.execute(
        "UPDATE comms_roles SET gap_through_seq = MAX(gap_through_seq, ?) WHERE id = ?",
        (seq, role_id),
    )


async def insert_instance(tx: Tx, row: dict[str, Any]) -> None:
    await tx.execute(
        "INSERT INTO comms_instances (id, role_id, name, token_digest, created_at)"
        " VALUES (?, ?, ?, ?, ?)",
        (row["id"], row["role_id"], row["name"], row["token_digest"], row["created_at"]),
    )


async def instance(q: Queryable, instance_id: str) -> dict[str, Any] | None:
    row = await q.fetchone("SELECT * FROM comms_instances WHERE id = ?", (instance_id,))
    return record(row)


async def instance_for_token(q: Queryable, digest: str) -> dict[str, Any] | None:
    """The instance a runtime token belongs to, unless its role's project is archived
    (archiving revokes the project's credentials, its runtime tokens included)."""
    row = await q.fetchone(
        "SELECT i.* FROM comms_instances i JOIN comms_roles r ON r.id = i.role_id"
        " JOIN projects p ON p.id = r.project_id"
        " WHERE i.token_digest = ? AND p.archived_at IS NULL",
        (digest,),
    )
    return record(row)


async def role_instances(q: Queryable, role_id: str) -> list[dict[str, Any]]:
    rows = await q.fetchall(
        "SELECT * FROM comms_instances WHERE role_id = ? ORDER BY created_at, id", (role_id,)
    )
    return [r for r in (record(row) for row in rows) if r is not None]


async def advance_cursor(tx: Tx, instance_id: str, seq: int) -> None:
    await tx.execute(
        "UPDATE comms_instances SET cursor = MAX(cursor, ?) WHERE id = ?", (seq, instance_id)
    )


async def report_receiver(
    tx: Tx, instance_id: str, mode: str, handler_state: str, enabled: bool, now: int
) -> None:
    await tx.execute(
        "UPDATE comms_instances SET receiver_mode = ?, receiver_handler_state = ?,"
        " receiver_enabled = ?, receiver_reported_at = ? WHERE id = ?",
        (mode, handler_state, 1 if enabled else 0, now, instance_id),
    )
