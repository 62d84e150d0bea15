"""Automations and their invocations.

The database is the source of truth for schedules: the scheduler is rebuilt from
`active()` at every start. A scheduled occurrence is recorded at most once per
(automation, scheduled_at); a second attempt raises Conflict.
"""

from __future__ import annotations

from typing import Any

from storage import filters
from storage.database import Tx
from storage.pages import keyset
from storage.rows import Queryable, dumps, record

JSON_COLUMNS = ("metadata", "target", "created_by")
INVOCATION_JSON = ("automation_snapshot",)
_SETTABLE = frozenset(
    {"name", "metadata", "expression", "timezone", "run_at", "target", "target_session_id"}
)


async def insert(tx: Tx, row: dict[str, Any], sealed_target: bytes) -> None:
    await tx.execute(
        "INSERT INTO automations (id, project_id, type, name, metadata, status, expression,"
        " timezone, run_at, target, sealed_target, target_session_id, created_by, created_at,"
        " updated_at) VALUES (?, ?, ?, ?, ?, 'active', ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            row["id"],
            row["project_id"],
            row["type"],
            row["name"],
            dumps(row["metadata"]),
            row.get("expression"),
            row.get("timezone"),
            row.get("run_at"),
            dumps(row["target"]),
            sealed_target,
            row.get("target_session_id"),
            dumps(row["created_by"]),
            row["created_at"],
            row["created_at"],
        ),
    )


async def get(q: Queryable, project_id: str, automation_id: str) -> dict[str, Any] | None:
    row = await q.fetchone(
        "SELECT * FROM automations WHERE project_id = ? AND id = ? AND deleted_at IS NULL",
        (project_id, automation_id),
    )
    return record(row, JSON_COLUMNS)


async def get_live(q: Queryable, automation_id: str) -> dict[str, Any] | None:
    """A live automation by id alone (the scheduler's view; no project scope)."""
    row = await q.fetchone(
        "SELECT * FROM automations WHERE id = ? AND deleted_at IS NULL", (automation_id,)
    )
    return record(row, JSON_COLUMNS)


async def active(q: Queryable) -> list[dict[str, Any]]:
    """Every live automation whose schedule should be registered."""
    rows = await q.fetchall(
        "SELECT * FROM automations WHERE status = 'active' AND deleted_at IS NULL"
        " ORDER BY created_at, id"
    )
    return [r for r in (record(row, JSON_COLUMNS) for row in rows) if r is not None]


async def update(
    tx: Tx,
    project_id: str,
    automation_id: str,
    fields: dict[str, Any],
    now: int,
    sealed_target: bytes | None = None,
) -> bool:
    """Set the named fields (JSON-encoding metadata and target) on a live automation."""
    unknown = set(fields) - _SETTABLE
    if unknown:
        raise ValueError(f"cannot set {sorted(unknown)}")
    columns = sorted(fields)
    values = [dumps(fields[c]) if c in ("metadata", "target") else fields[c] for c in columns]
    assignments = [f"{c} = ?" for c in columns]
    if sealed_target is not None:
        assignments.append("sealed_target = ?")
        values.append(sealed_target)
    assignments.append("updated_at = ?")
    values.append(now)
    changed = await tx.execute(
        f"UPDATE automations SET {', '.join(assignments)}"
        " WHERE project_id = ? AND id = ? AND deleted_at IS NULL",
        (*values, project_id, automation_id),
    )
    return changed == 1


async def move_status(
    tx: Tx, automation_id: str, sources: tuple[str, ...], target: str, now: int
) -> bool:
    """Compare-and-set the status of a live automation; False when it was not in `sources`."""
    marks = ", ".join("?" for _ in sources)
    changed = await tx.execute(
        f"UPDATE automations SET status = ?, updated_at = ?"
        f" WHERE id = ? AND deleted_at IS NULL AND status IN ({marks})",
        (target, now, automation_id, *sources),
    )
    return changed == 1


async def delete(tx: Tx, project_id: str, automation_id: str, now: int) -> bool:
    changed = await tx.execute(
        "UPDATE automations SET deleted_at = ?"
        " WHERE project_id = ? AND id = ? AND deleted_at IS NULL",
        (now, project_id, automation_id),
    )
    return changed == 1


async def page(
    q: Queryable,
    project_id: str,
    *,
    session_id: str | None,
    after: str | None,
    limit: int,
    order: str,
) -> tuple[list[dict[str, Any]], bool]:
    sql, params = filters.where(
        ("project_id = ? AND deleted_at IS NULL", (project_id,)),
        ("target_session_id = ?", (session_id,)) if session_id is not None else ("", ()),
    )
    rows, more = await keyset(
        q, table="automations", where=sql, params=params, after=after, limit=limit, order=order
    )
    return [r for r in (record(row, JSON_COLUMNS) for row in rows) if r is not None], more


async def sealed_target(q: Queryable, automation_id: str) -> bytes | None:
    row = await q.fetchone("SELECT sealed_target FROM automations WHERE id = ?", (automation_id,))
    return None if row is None else bytes(row["sealed_target"])


async def insert_invocation(tx: Tx, row: dict[str, Any]) -> None:
    """Record a queued invocation; Conflict if this scheduled occurrence already exists."""
    snapshot = row.get("automation_snapshot")
    await tx.execute(
        "INSERT INTO automation_invocations (id, automation_id, project_id, source,"
        " automation_snapshot, scheduled_at, status, created_at, updated_at)"
        " VALUES (?, ?, ?, ?, ?, ?, 'queued', ?, ?)",
        (
            row["id"],
            row["automation_id"],
            row["project_id"],
            row["source"],
            None if snapshot is None else dumps(snapshot),
            row.get("scheduled_at"),
            row["created_at"],
            row["created_at"],
        ),
    )


async def settle_invocation(
    tx: Tx,
    invocation_id: str,
    *,
    status: str,
    now: int,
    session_id: str | None = None,
    skip_reason: str | None = None,
    error: tuple[str, str] | None = None,
) -> bool:
    """Move a queued invocation to its outcome (compare-and-set from `queued`)."""
    code, message = error if error is not None else (None, None)
    changed = await tx.execute(
        "UPDATE automation_invocations SET status = ?, session_id = ?, skip_reason = ?,"
        " error_code = ?, error_message = ?, updated_at = ? WHERE id = ? AND status = 'queued'",
        (status, session_id, skip_reason, code, message, now, invocation_id),
    )
    return changed == 1


async def get_invocation(
    q: Queryable, automation_id: str, invocation_id: str
) -> dict[str, Any] | None:
    row = await q.fetchone(
        "SELECT * FROM automation_invocations WHERE automation_id = ? AND id = ?",
        (automation_id, invocation_id),
    )
    return record(row, INVOCATION_JSON)


async def queued_invocations(q: Queryable) -> list[dict[str, Any]]:
    """Invocations recorded but never settled (the process stopped in between)."""
    rows = await q.fetchall(
        "SELECT * FROM automation_invocations WHERE status = 'queued' ORDER BY created_at, id"
    )
    return [r for r in (record(row, INVOCATION_JSON) for row in rows) if r is not None]


async def has_occurrence(q: Queryable, automation_id: str, scheduled_at: int) -> bool:
    row = await q.fetchone(
        "SELECT 1 FROM automation_invocations"
        " WHERE automation_id = ? AND scheduled_at = ? AND source = 'automation'",
        (automation_id, scheduled_at),
    )
    return row is not None


async def invocation_page(
    q: Queryable, automation_id: str, *, after: str | None, limit: int, order: str
) -> tuple[list[dict[str, Any]], bool]:
    rows, more = await keyset(
        q,
        table="automation_invocations",
        where="automation_id = ?",
        params=(automation_id,),
        after=after,
        limit=limit,
        order=order,
    )
    return [r for r in (record(row, INVOCATION_JSON) for row in rows) if r is not None], more
