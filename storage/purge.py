"""Purging deleted data for good: the explicit cascade, and what retention collects.

A deleted session, agent or other resource is first a tombstone (`deleted_at`); once
its retention has passed, `collect` removes its rows and every row that belongs to it.
Which tables belong to what is written out below, table by table: a table that holds a
`session_id`, `agent_id` or `environment_id` column is either in a cascade or named in
`KEPT` with the reason it outlives its owner (a layout test reads the schema and holds
this rule, so a new table is never forgotten).

`collect` returns what it removed: row counts per table and the wire ids of managed
environments whose workspace directories the caller must remove after the commit. A dry
run removes the same rows inside a savepoint, counts them and the blobs still referenced
without them, and rolls the savepoint back: what it reports is what a collection at the
same moment removes, by construction.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from storage import turn_documents
from storage.database import Tx
from storage.rows import Queryable

# Rows that belong to one session, deleted with it (children before parents).
SESSION_CASCADE: tuple[str, ...] = (
    "session_events",
    "items",
    "function_calls",
    "interactions",
    "turn_inputs",
    "artifacts",
    "subagent_items",
    "subagent_turns",
    "subagents",
    "session_rewinds",
    "session_revisions",
    "commands",
    "turns",
)
# How a session's rows are found in a table that holds no `session_id` of its own.
SESSION_WHERE: dict[str, str] = {
    "session_events": "session_key = (SELECT journal_key FROM sessions WHERE id = ?)",
    "subagent_items": "subagent_id IN (SELECT id FROM subagents WHERE session_id = ?)",
}
# Rows that belong to one environment, deleted with it.
ENVIRONMENT_CASCADE: tuple[str, ...] = ("environment_files",)
# Rows that belong to one agent, deleted with it.
AGENT_CASCADE: tuple[str, ...] = ("agent_audit", "agent_deployments", "agent_versions")

# Every table whose rows a purge deletes.
PURGED = frozenset(
    {*SESSION_CASCADE, *ENVIRONMENT_CASCADE, *AGENT_CASCADE, "sessions", "environments", "agents"}
)

# Tables with an owner's column whose rows outlive that owner, and why.
KEPT: dict[tuple[str, str], str] = {
    ("sessions", "agent_id"): "a session keeps its frozen copy of the agent",
    ("turns", "agent_id"): "purged with its session, not with the agent",
    ("sessions", "environment_id"): "an environment a session made for itself is purged"
    " with the last session that uses it; one made through environments.create stays",
    ("artifacts", "environment_id"): "purged with its session",
    ("automation_invocations", "session_id"): "an automation's history names the session"
    " it started; the id stays a dangling reference",
    ("comms_roles", "agent_id"): "a messaging role outlives the agent it may run",
    ("overlays", "agent_id"): "an overlay's history (actor, reason, time) is the project's"
    " audit record; the id stays a dangling reference",
}


@dataclass
class Collected:
    """What one collection removed (or would remove)."""

    rows: dict[str, int] = field(default_factory=dict)
    sessions: list[str] = field(default_factory=list)
    workspaces: list[str] = field(default_factory=list)
    # The blobs a row still names once the collection is done (read by a dry run only).
    referenced: set[str] = field(default_factory=set)

    def add(self, table: str, count: int) -> None:
        if count:
            self.rows[table] = self.rows.get(table, 0) + count

    @property
    def total(self) -> int:
        return sum(self.rows.values())


async def collect(tx: Tx, cutoff: int, *, now: int, dry_run: bool = False) -> Collected:
    """Purge everything deleted at or before `cutoff` (Unix seconds), and the uploaded
    files expired at or before `now`. With `dry_run`, do the same inside a savepoint, read
    what it left referenced, and roll it back: nothing changes."""
    if not dry_run:
        return await _collect(tx, cutoff, now)
    await tx.execute("SAVEPOINT gc_dry_run")
    try:
        done = await _collect(tx, cutoff, now)
        done.referenced = await referenced_blobs(tx)
    finally:
        await tx.execute("ROLLBACK TO SAVEPOINT gc_dry_run")
        await tx.execute("RELEASE SAVEPOINT gc_dry_run")
    return done


# The blobs an artifact or an uploaded file names (a blob no row names is swept).
REFERENCED_BLOBS = (
    "SELECT blob FROM artifacts WHERE blob IS NOT NULL"
    " UNION SELECT blob FROM files WHERE blob IS NOT NULL"
)


async def referenced_blobs(tx: Tx) -> set[str]:
    return {str(row["blob"]) for row in await tx.fetchall(REFERENCED_BLOBS)}


async def _collect(tx: Tx, cutoff: int, now: int) -> Collected:
    done = Collected()
    done.add("files", await _rows(tx, "files", "expires_at <= ?", (now,)))
    doomed = await tx.fetchall(
        "SELECT id FROM sessions WHERE deleted_at IS NOT NULL AND deleted_at <= ? ORDER BY id",
        (cutoff,),
    )
    for row in doomed:
        await purge_session(tx, str(row["id"]), done)
    for table in ("agents", "environment_templates", "automations", "vault_credentials", "vaults"):
        await _tombstones(tx, table, cutoff, done)
    await _deleted_artifacts(tx, cutoff, done)
    done.add("turn_documents", await turn_documents.collect(tx))
    return done


async def purge_session(tx: Tx, session_id: str, done: Collected) -> None:
    """Remove one session, its rows in `SESSION_CASCADE`, and the environment it made for
    itself (`owner = 'session'`) when no other session uses it. An environment made
    through `environments.create` (`owner = 'project'`) is the project's and stays."""
    done.sessions.append(session_id)
    for table in SESSION_CASCADE:
        where = SESSION_WHERE.get(table, "session_id = ?")
        done.add(table, await _rows(tx, table, where, (session_id,)))
    row = await tx.fetchone("SELECT environment_id FROM sessions WHERE id = ?", (session_id,))
    done.add("sessions", await _rows(tx, "sessions", "id = ?", (session_id,)))
    environment_id = None if row is None else row["environment_id"]
    if environment_id is not None:
        await _orphan_environment(tx, str(environment_id), done)


async def _orphan_environment(tx: Tx, environment_id: str, done: Collected) -> None:
    environment = await tx.fetchone(
        "SELECT wire_id, type, owner FROM environments WHERE id = ?", (environment_id,)
    )
    if environment is None or environment["owner"] != "session":
        return
    others = await tx.fetchone(
        "SELECT COUNT(*) AS n FROM sessions WHERE environment_id = ?", (environment_id,)
    )
    if others is not None and int(others["n"]):
        return
    for table in ENVIRONMENT_CASCADE:
        done.add(table, await _rows(tx, table, "environment_id = ?", (environment_id,)))
    done.add("environments", await _rows(tx, "environments", "id = ?", (environment_id,)))
    if environment["type"] == "openai_hosted":
        done.workspaces.append(str(environment["wire_id"]))


async def _tombstones(tx: Tx, table: str, cutoff: int, done: Collected) -> None:
    where = "deleted_at IS NOT NULL AND deleted_at <= ?"
    if table == "agents":
        for row in await tx.fetchall(f"SELECT id FROM agents WHERE {where}", (cutoff,)):
            for child in AGENT_CASCADE:
                done.add(child, await _rows(tx, child, "agent_id = ?", (row["id"],)))
    done.add(table, await _rows(tx, table, where, (cutoff,)))


async def _deleted_artifacts(tx: Tx, cutoff: int, done: Collected) -> None:
    where = "deleted_at IS NOT NULL AND deleted_at <= ?"
    done.add("artifacts", await _rows(tx, "artifacts", where, (cutoff,)))


async def _rows(tx: Tx, table: str, where: str, params: tuple[object, ...]) -> int:
    return await tx.execute(f"DELETE FROM {table} WHERE {where}", params)


async def owner_columns(q: Queryable) -> list[tuple[str, str]]:
    """Every (table, column) of the schema that names a session, agent or environment,
    and every foreign key column that points into a table a cascade purges (a row there
    would otherwise outlive, or block, the purge of what it points at)."""
    found: list[tuple[str, str]] = []
    for table, column, parent in await _schema(q):
        if column in ("session_id", "agent_id", "environment_id"):
            if (table, column) not in found:
                found.append((table, column))
        elif parent in PURGED and (table, column) not in found:
            found.append((table, column))
    return found


async def _schema(q: Queryable) -> list[tuple[str, str, str | None]]:
    """(table, column, the table its foreign key points at or None) for every column of
    every table, in table order, each table's plain columns before its foreign keys."""
    if q.backend == "postgresql":
        rows = await q.fetchall(
            "SELECT c.table_name AS t, c.column_name AS c, NULL AS parent"
            " FROM information_schema.columns c"
            " WHERE c.table_schema = current_schema() AND c.table_name IN"
            " (SELECT table_name FROM information_schema.tables"
            " WHERE table_schema = current_schema() AND table_type = 'BASE TABLE')"
            " UNION ALL SELECT kcu.table_name, kcu.column_name, ccu.table_name"
            " FROM information_schema.table_constraints tc"
            " JOIN information_schema.key_column_usage kcu"
            "  ON kcu.constraint_name = tc.constraint_name"
            "  AND kcu.table_schema = tc.table_schema"
            " JOIN information_schema.constraint_column_usage ccu"
            "  ON ccu.constraint_name = tc.constraint_name"
            "  AND ccu.table_schema = tc.table_schema"
            " WHERE tc.constraint_type = 'FOREIGN KEY' AND tc.table_schema = current_schema()"
            " ORDER BY 1, 3 NULLS FIRST"
        )
        return [(str(r["t"]), str(r["c"]), r["parent"]) for r in rows]
    found: list[tuple[str, str, str | None]] = []
    tables = await q.fetchall(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
        " ORDER BY name"
    )
    for table in tables:
        name = str(table["name"])
        columns = await q.fetchall(f"SELECT name FROM pragma_table_info('{name}')")
        found.extend((name, str(column["name"]), None) for column in columns)
        keys = await q.fetchall(
            f'SELECT "table" AS parent, "from" AS name FROM pragma_foreign_key_list(\'{name}\')'
        )
        found.extend((name, str(key["name"]), str(key["parent"])) for key in keys)
    return found


def covered(table: str, column: str) -> bool:
    """Whether the cascade or `KEPT` accounts for `table.column`."""
    cascades = {
        "session_id": SESSION_CASCADE,
        "agent_id": AGENT_CASCADE,
        "environment_id": ENVIRONMENT_CASCADE,
    }
    if column not in cascades:  # a foreign key into a purged table
        return table in PURGED or (table, column) in KEPT
    return table in cascades[column] or (table, column) in KEPT
