"""Tier 3: the purge cascade covers every table that names a session, agent or
environment, and a collection removes a deleted session's rows (a dry run none)."""

from __future__ import annotations

import asyncio

from storage import Database, environments, purge, sessions, turn_documents
from storage.database import Tx
from tests.storage.conftest import Target


def test_every_owner_column_is_in_a_cascade_or_kept_with_a_reason(target: Target) -> None:
    async def main() -> list[tuple[str, str]]:
        db = await Database.open(target("layout.db"))
        try:
            return await db.read(purge.owner_columns)
        finally:
            await db.close()

    columns = asyncio.run(main())
    assert ("items", "session_id") in columns
    uncovered = [pair for pair in columns if not purge.covered(*pair)]
    assert not uncovered, (
        f"add these to a cascade in storage/purge.py, or to KEPT with a reason: {uncovered}"
    )


async def _deleted_session(tx: Tx, session_id: str, deleted_at: int | None) -> None:
    await tx.execute(
        "INSERT INTO projects (id, name, created_at) VALUES ('p', 'p', 0) ON CONFLICT DO NOTHING"
    )
    await sessions.insert(
        tx,
        {
            "id": session_id,
            "project_id": "p",
            "agent_id": "a",
            "harness": "scripted",
            "created_at": 0,
            "agent": {},
            "environment": {"type": "none"},
            "metadata": {},
            "vault_ids": [],
        },
    )
    await tx.execute(
        "INSERT INTO turns (id, session_id, agent_id, status, created_at, completed_at)"
        " VALUES (?, ?, 'a', 'completed', 0, 1)",
        (f"turn_{session_id}", session_id),
    )
    await tx.execute(
        "INSERT INTO items (id, session_id, turn_id, position, created_at, type, payload)"
        " VALUES (?, ?, ?, 1, 0, 'message', '{}')",
        (f"item_{session_id}", session_id, f"turn_{session_id}"),
    )
    # A subagent with its turn and item (the item names its session only through the
    # subagent), and a rewind marker: all belong to the session.
    await tx.execute(
        "INSERT INTO subagents (id, session_id, parent_turn_id, parent_agent_id, native_id,"
        " status, opened_at, created_at) VALUES (?, ?, ?, 'a', 'n', 'closed', 0, 0)",
        (f"sub_{session_id}", session_id, f"turn_{session_id}"),
    )
    await tx.execute(
        "INSERT INTO subagent_turns (id, subagent_id, session_id, native_id, status, created_at)"
        " VALUES (?, ?, ?, 'n', 'completed', 0)",
        (f"subturn_{session_id}", f"sub_{session_id}", session_id),
    )
    await tx.execute(
        "INSERT INTO subagent_items (id, subagent_id, turn_id, native_id, position, type,"
        " payload, created_at) VALUES (?, ?, ?, 'n', 1, 'message', '{}', 0)",
        (f"subitem_{session_id}", f"sub_{session_id}", f"subturn_{session_id}"),
    )
    await tx.execute(
        "INSERT INTO session_rewinds (id, session_id, turns, hidden_turn_ids, created_at)"
        " VALUES (?, ?, 1, '[]', 0)",
        (f"rw_{session_id}", session_id),
    )
    await tx.execute("UPDATE sessions SET deleted_at = ? WHERE id = ?", (deleted_at, session_id))


def test_collect_purges_only_what_retention_releases(target: Target) -> None:
    async def main() -> tuple[int, int, list[str], int]:
        db = await Database.open(target("purge.db"))
        try:

            async def setup(tx: Tx) -> None:
                await _deleted_session(tx, "old", 100)
                await _deleted_session(tx, "recent", 900)
                await _deleted_session(tx, "live", None)

            await db.write(setup)
            dry = await db.write(lambda tx: purge.collect(tx, 500, now=500, dry_run=True))
            still = await db.read(lambda r: r.fetchone("SELECT COUNT(*) AS n FROM items"))
            done = await db.write(lambda tx: purge.collect(tx, 500, now=500))
            left = await db.read(lambda r: r.fetchall("SELECT id FROM sessions ORDER BY id"))
            items = await db.read(lambda r: r.fetchone("SELECT COUNT(*) AS n FROM items"))
            return (
                dry.total,
                int(still["n"]),
                [row["id"] for row in left],
                done.total + int(items["n"]),
            )
        finally:
            await db.close()

    dry_total, items_after_dry_run, left, removed_plus_items = asyncio.run(main())
    # The old session, its turn, its item, its subagent with its turn and item, its rewind.
    assert dry_total == 7
    assert items_after_dry_run == 3
    assert left == ["live", "recent"]
    assert removed_plus_items == 7 + 2


async def _artifact(tx: Tx, artifact_id: str, session_id: str, deleted_at: int | None) -> None:
    await tx.execute(
        "INSERT INTO artifacts (id, session_id, turn_id, environment_id, path, size_bytes,"
        " sha256, content, created_at, deleted_at, blob) VALUES (?, ?, ?, 'e', 'a.txt', 1,"
        " 'x', ?, 0, ?, ?)",
        (artifact_id, session_id, f"turn_{session_id}", b"", deleted_at, f"blob_{artifact_id}"),
    )


def test_a_dry_run_reports_exactly_what_the_collection_then_removes(target: Target) -> None:
    """A deleted session's turn documents count (its turns still name them until the
    purge), and an artifact both deleted and in a purged session counts once."""

    async def main() -> tuple[purge.Collected, purge.Collected, int]:
        db = await Database.open(target("dry.db"))
        try:

            async def setup(tx: Tx) -> None:
                await _deleted_session(tx, "old", 100)
                await _deleted_session(tx, "live", None)
                key = await turn_documents.key_of(tx, '{"manifest": "old"}')
                await tx.execute("UPDATE turns SET manifest_key = ? WHERE id = 'turn_old'", (key,))
                await _artifact(tx, "in_old", "old", 50)
                await _artifact(tx, "deleted", "live", 50)
                await _artifact(tx, "kept", "live", None)

            await db.write(setup)
            dry = await db.write(lambda tx: purge.collect(tx, 500, now=500, dry_run=True))
            items = await db.read(lambda r: r.fetchone("SELECT COUNT(*) AS n FROM items"))
            done = await db.write(lambda tx: purge.collect(tx, 500, now=500))
            return dry, done, int(items["n"])
        finally:
            await db.close()

    dry, done, items_after_dry_run = asyncio.run(main())
    assert done.rows["turn_documents"] == 1 and done.rows["artifacts"] == 2
    assert dry.rows == done.rows and dry.sessions == done.sessions == ["old"]
    assert dry.referenced == {"blob_kept"}
    assert items_after_dry_run == 2


async def _environment(tx: Tx, environment_id: str, owner: str, *session_ids: str) -> None:
    """An `openai_hosted` environment owned by `owner` (`session` or `project`), bound to
    each of `session_ids`."""
    await environments.insert(
        tx,
        {
            "id": environment_id,
            "project_id": "p",
            "wire_id": f"wire_{environment_id}",
            "type": "openai_hosted",
            "status": "ready",
            "config": {},
            "created_at": 0,
            "owner": owner,
        },
    )
    for session_id in session_ids:
        await tx.execute(
            "UPDATE sessions SET environment_id = ? WHERE id = ?", (environment_id, session_id)
        )


def test_a_purged_session_takes_its_own_environment_and_leaves_the_projects(
    target: Target,
) -> None:
    async def main() -> tuple[list[str], list[str], list[str]]:
        db = await Database.open(target("owners.db"))
        try:

            async def setup(tx: Tx) -> None:
                for session_id in ("alone", "first", "shared", "user"):
                    await _deleted_session(tx, session_id, 100)
                await _deleted_session(tx, "live", None)
                await _environment(tx, "env_own", "session", "alone")
                await _environment(tx, "env_both", "session", "first", "shared")
                await _environment(tx, "env_kept", "session", "live")
                await tx.execute(
                    "UPDATE sessions SET environment_id = 'env_kept' WHERE id = 'user'"
                )
                await _environment(tx, "env_project", "project", "user")
                await _environment(tx, "env_archived", "project")
                await tx.execute(
                    "UPDATE environments SET archived_at = 50 WHERE id = 'env_archived'"
                )

            await db.write(setup)
            dry = await db.write(lambda tx: purge.collect(tx, 500, now=500, dry_run=True))
            done = await db.write(lambda tx: purge.collect(tx, 500, now=500))
            left = await db.read(lambda r: r.fetchall("SELECT id FROM environments ORDER BY id"))
            return dry.workspaces, done.workspaces, [str(row["id"]) for row in left]
        finally:
            await db.close()

    would, removed, left = asyncio.run(main())
    # Two sessions on one environment of their own: it goes with the last of them.
    assert would == removed == ["wire_env_own", "wire_env_both"]
    assert left == ["env_archived", "env_kept", "env_project"]
