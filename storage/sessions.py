"""Sessions: the frozen agent snapshot, environment, metadata and the event counter."""

from __future__ import annotations

from typing import Any

from storage import journal
from storage.database import Tx
from storage.rows import Queryable, dumps, record

JSON_COLUMNS = ("agent", "environment", "metadata", "vault_ids", "options")


async def insert(tx: Tx, row: dict[str, Any]) -> None:
    """Insert the session `row` describes, with what it froze for its executions when
    `row` carries them (`execution_settings`, `sealed_model_key`, `capability_notes`:
    see `storage.execution_settings`)."""
    await tx.execute(
        "INSERT INTO sessions (id, project_id, agent_id, harness, created_at, last_active_at,"
        " agent, environment, metadata, vault_ids, idempotency_key, request_hash,"
        " agent_version, options, execution_settings, sealed_model_key, capability_notes)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            row["id"],
            row["project_id"],
            row["agent_id"],
            row["harness"],
            row["created_at"],
            row["created_at"],
            dumps(row["agent"]),
            dumps(row["environment"]),
            dumps(row["metadata"]),
            dumps(row["vault_ids"]),
            row.get("idempotency_key"),
            row.get("request_hash"),
            row.get("agent_version"),
            dumps(row.get("options") or {}),
            dumps(row.get("execution_settings") or {}),
            row.get("sealed_model_key"),
            dumps(row.get("capability_notes") or []),
        ),
    )


async def get(q: Queryable, project_id: str, session_id: str) -> dict[str, Any] | None:
    row = await q.fetchone(
        "SELECT * FROM sessions WHERE project_id = ? AND id = ? AND deleted_at IS NULL",
        (project_id, session_id),
    )
    return record(row, JSON_COLUMNS)


_ANY = (
    "SELECT sessions.*, environments.seed_wire_id AS environment_seed_wire_id,"
    " environments.seed_snapshot AS environment_seed_snapshot,"
    " EXISTS (SELECT 1 FROM turns WHERE turns.session_id = sessions.id"
    " AND turns.started_at IS NOT NULL) AS has_started_turn{facts}"
    " FROM sessions LEFT JOIN environments ON environments.id = sessions.environment_id"
    " WHERE sessions.id = ?"
)

# What a session's snapshot derives from other tables (`allinone.core.recorder`), read
# in the statement that reads its row, so at the same moment: its latest turn (the
# active one when there is one: a session has at most one, and the newest by
# `created_at` is not it when the clock was set back after an earlier turn), whether
# a turn is active (the active condition repeats the partial unique index's own, word
# for word, so SQLite answers from it), whether any rewind marker hides turns and
# whether any safety overlay is in force for it (`storage.overlays.active`).
_ACTIVE_TURN = (
    "(SELECT t.{column} FROM turns t WHERE t.session_id = sessions.id"
    " AND t.status IN ('queued', 'in_progress', 'waiting'))"
)
_NEWEST_TURN = (
    "(SELECT t.{column} FROM turns t WHERE t.session_id = sessions.id"
    " ORDER BY t.created_at DESC, t.id DESC LIMIT 1)"
)
_LATEST_TURN = f"COALESCE({_ACTIVE_TURN}, {_NEWEST_TURN})"
_VIEW_FACTS = (
    f", {_LATEST_TURN.format(column='id')} AS latest_turn_id"
    f", {_LATEST_TURN.format(column='status')} AS latest_turn_status"
    ", EXISTS (SELECT 1 FROM turns t WHERE t.session_id = sessions.id"
    " AND t.status IN ('queued', 'in_progress', 'waiting')) AS has_active_turn"
    ", EXISTS (SELECT 1 FROM session_rewinds r WHERE r.session_id = sessions.id)"
    " AS has_rewinds"
    ", EXISTS (SELECT 1 FROM overlays o WHERE o.cleared_at IS NULL"
    " AND o.project_id = sessions.project_id"
    " AND (o.agent_id IS NULL OR o.agent_id = sessions.agent_id)) AS has_overlays"
)


async def get_any(q: Queryable, session_id: str) -> dict[str, Any] | None:
    """Load a session without a project scope (Core-internal use only), with the seed
    of its environment's workspace (`environment_seed_wire_id`, `..._snapshot`) and
    whether any of its turns ever started (`has_started_turn`, 0 or 1)."""
    row = await q.fetchone(_ANY.format(facts=""), (session_id,))
    return record(row, JSON_COLUMNS)


_FOR_VIEW = _ANY.format(facts=_VIEW_FACTS)
_FOR_VIEW_IN_PROJECT = _FOR_VIEW + " AND sessions.project_id = ? AND sessions.deleted_at IS NULL"


async def get_for_view(
    q: Queryable, session_id: str, project_id: str | None = None
) -> dict[str, Any] | None:
    """`get_any` with the facts the session's snapshot derives from other tables, read
    in the same statement: `latest_turn_id` and `latest_turn_status` (null without a
    turn), `has_active_turn`, `has_rewinds` and `has_overlays`. With `project_id`, as
    `get` scopes it: only a session of that project that is not deleted."""
    if project_id is None:
        row = await q.fetchone(_FOR_VIEW, (session_id,))
    else:
        row = await q.fetchone(_FOR_VIEW_IN_PROJECT, (session_id, project_id))
    return record(row, JSON_COLUMNS)


async def by_idempotency_key(q: Queryable, project_id: str, key: str) -> dict[str, Any] | None:
    row = await q.fetchone(
        "SELECT * FROM sessions WHERE project_id = ? AND idempotency_key = ?", (project_id, key)
    )
    return record(row, JSON_COLUMNS)


async def set_native_session(tx: Tx, session_id: str, native_session_id: str) -> None:
    """Record the native session the session's harness reported (see 0023)."""
    await tx.execute(
        "UPDATE sessions SET native_session_id = ? WHERE id = ?", (native_session_id, session_id)
    )


async def is_deleted(q: Queryable, session_id: str) -> bool:
    """Whether the session is gone or marked deleted."""
    row = await q.fetchone("SELECT deleted_at FROM sessions WHERE id = ?", (session_id,))
    return row is None or row["deleted_at"] is not None


async def next_event_seq(tx: Tx, session_id: str, now: int) -> int:
    """Take the session's next journal sequence (one statement); something happened in
    the session, so it was active at `now` (never moved back)."""
    # fetchall steps the statement to its end, so nothing is left open in the transaction.
    rows = await tx.fetchall(
        "UPDATE sessions SET event_seq = event_seq + 1, last_active_at ="
        " CASE WHEN last_active_at < ? THEN ? ELSE last_active_at END WHERE id = ?"
        " RETURNING event_seq, journal_key",
        (now, now, session_id),
    )
    assert rows
    # The job's appends then name the session by its key instead of looking it up.
    if rows[0]["journal_key"] is not None:
        journal.note_session_key(tx, session_id, int(rows[0]["journal_key"]))
    return int(rows[0]["event_seq"])


async def set_event_seq(tx: Tx, session_id: str, seq: int) -> None:
    """Record `seq` as the session's latest journal sequence (never lowers it)."""
    await tx.execute(
        "UPDATE sessions SET event_seq = ? WHERE id = ? AND event_seq < ?", (seq, session_id, seq)
    )


async def update(
    tx: Tx,
    session_id: str,
    *,
    agent: dict[str, Any] | None = None,
    metadata: dict[str, str] | None = None,
    options: dict[str, Any] | None = None,
) -> None:
    if agent is not None:
        await tx.execute("UPDATE sessions SET agent = ? WHERE id = ?", (dumps(agent), session_id))
    if metadata is not None:
        await tx.execute(
            "UPDATE sessions SET metadata = ? WHERE id = ?", (dumps(metadata), session_id)
        )
    if options is not None:
        await tx.execute(
            "UPDATE sessions SET options = ? WHERE id = ?", (dumps(options), session_id)
        )


async def delete(tx: Tx, session_id: str, now: int) -> bool:
    """Soft-delete a session that has no active turn; return whether it was deleted."""
    changed = await tx.execute(
        "UPDATE sessions SET deleted_at = ? WHERE id = ? AND deleted_at IS NULL"
        " AND NOT EXISTS (SELECT 1 FROM turns WHERE session_id = ?"
        " AND status IN ('queued', 'in_progress', 'waiting'))",
        (now, session_id, session_id),
    )
    return changed == 1


async def bind_environment(
    tx: Tx, session_id: str, environment: dict[str, Any], environment_id: str
) -> None:
    """Store the session's rendered environment and the id of the environment it uses."""
    await tx.execute(
        "UPDATE sessions SET environment = ?, environment_id = ? WHERE id = ?",
        (dumps(environment), environment_id, session_id),
    )


def list_filter(
    project_id: str, agent_id: str | None, metadata: list[tuple[str, str]]
) -> tuple[str, tuple[Any, ...]]:
    """The WHERE clause (and its arguments) of a project's live sessions, optionally of
    one agent and with every (key, value) of `metadata` among their metadata."""
    where = "project_id = ? AND deleted_at IS NULL"
    args: list[Any] = [project_id]
    if agent_id:
        where += " AND agent_id = ?"
        args.append(agent_id)
    for key, value in metadata:
        where += (
            " AND EXISTS (SELECT 1 FROM json_each(sessions.metadata)"
            " WHERE json_each.key = ? AND json_each.value = ?)"
        )
        args.extend([key, value])
    return where, tuple(args)
