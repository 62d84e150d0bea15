"""Migration 29 keeps every turn as readers saw it: a database written at schema 28 is
migrated, and each turn read through `turns_full` has the manifest, context,
configuration digest, checkpoint and usage it had; run-only state is gone from ended
turns and kept on running ones; equal documents are stored once; the session totals'
triggers go on counting."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path
from typing import Any

from storage import Database, migrations, postgres, turn_documents, turns
from tests.storage.conftest import Target, raw
from tests.storage.test_usage_total import create_session

BEFORE = 29
STANDARD = {
    "input_tokens": 5,
    "input_tokens_details": {"cached_tokens": 1},
    "output_tokens": 7,
    "output_tokens_details": {"reasoning_tokens": 0},
    "total_tokens": 12,
}
OTHER = {"input_tokens": 1, "output_tokens": 2, "total_tokens": 3}
MANIFEST = json.dumps({"config_digest": "sha256:aa", "model": "scripted", "request_ids": []})
CONTEXT = json.dumps({"rebuilt": False, "items_included": None, "turns_hidden": 0})
RUN_ONLY = ("checkpoint_cursor", "inflight_operation")


def migrate_to_before(where: Path | str) -> None:
    """Bring an empty database to the schema before migration 29, as older builds did."""
    if isinstance(where, Path):
        conn = sqlite3.connect(where, isolation_level=None)
        conn.execute(
            "CREATE TABLE schema_version (version INTEGER PRIMARY KEY, applied_at INTEGER)"
        )
        for version, sql in migrations.available():
            if version >= BEFORE:
                break
            for statement in migrations._statements(sql):
                conn.execute(statement)
            conn.execute("INSERT INTO schema_version VALUES (?, 0)", (version,))
        conn.close()
        return
    with postgres.connect(where) as pg, pg.transaction():
        pg.execute(
            "CREATE TABLE schema_version (version BIGINT PRIMARY KEY, applied_at BIGINT NOT NULL)"
        )
        for version, sql in migrations.available("postgresql"):
            if version >= BEFORE:
                break
            migrations._apply_postgres_file(pg, version, sql)


def old_turn(turn_id: str, status: str, usage: dict[str, Any] | None) -> dict[str, Any]:
    ended = status != "in_progress"
    return {
        "id": turn_id,
        "session_id": "sess_0",
        "agent_id": "a",
        "status": status,
        "created_at": 1,
        "completed_at": 2 if ended else None,
        "usage": None if usage is None else json.dumps(usage),
        "manifest": MANIFEST,
        "context": CONTEXT,
        "config_digest": "sha256:cfg",
        "checkpoint_boundary": "between_model_calls",
        "checkpoint_config_digest": "sha256:cfg",
        "checkpoint_cursor": '{"v":1}',
        "checkpoint_journal_seq": 3,
        "inflight_operation": "model output m1",
        "core_process_id": "proc_1",
        "device_id": "local-runtime",
        "lease_expires_at": 99,
    }


def write_old(where: Path | str) -> None:
    with raw(where) as conn:
        create_session(conn, "sess_0")
        for row in (
            old_turn("turn_a", "completed", STANDARD),
            old_turn("turn_b", "failed", OTHER),
            old_turn("turn_c", "in_progress", None),
        ):
            names = ", ".join(row)
            marks = ", ".join("?" for _ in row)
            conn.execute(f"INSERT INTO turns ({names}) VALUES ({marks})", tuple(row.values()))


async def read_after(where: Path | str) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    db = await Database.open(where)
    try:
        found = [
            await db.read(lambda r, t=t: turns.get(r, t)) for t in ("turn_a", "turn_b", "turn_c")
        ]
        documents = await db.read(lambda r: r.fetchone("SELECT COUNT(*) AS n FROM turn_documents"))
        ended = await db.write(
            lambda tx: turns.transition(
                tx,
                "turn_c",
                ("in_progress",),
                "completed",
                fields={"completed_at": 3, "usage": STANDARD},
            )
        )
        assert ended
        total = await db.read(lambda r: turns.usage_total(r, "sess_0"))
    finally:
        await db.close()
    assert documents is not None and int(documents["n"]) == 3  # manifest, context, digest
    return [r for r in found if r is not None], total


def test_migration_29_keeps_every_turn_as_readers_saw_it(target: Target) -> None:
    where = target("compact.db")
    migrate_to_before(where)
    write_old(where)

    async def main() -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
        db = await Database.open(where)
        await db.close()
        return await read_after(where)

    rows, total = asyncio.run(main())
    assert [r["id"] for r in rows] == ["turn_a", "turn_b", "turn_c"]
    for row, usage in zip(rows, (STANDARD, OTHER, None), strict=True):
        assert row["manifest"] == MANIFEST
        assert row["context"] == json.loads(CONTEXT)
        assert row["config_digest"] == "sha256:cfg"
        assert row["checkpoint_config_digest"] == "sha256:cfg"
        assert row["checkpoint_boundary"] == "between_model_calls"
        assert row["usage"] == usage
    assert rows[0]["manifest_key"] == rows[1]["manifest_key"] == rows[2]["manifest_key"]
    for column in RUN_ONLY:
        assert rows[0][column] is None and rows[1][column] is None
        assert rows[2][column] is not None  # still running when migrated
    assert rows[0]["lease_expires_at"] is None and rows[2]["lease_expires_at"] == 99
    # Where it ran stays.
    assert (rows[0]["core_process_id"], rows[0]["device_id"]) == ("proc_1", "local-runtime")
    # turn_c ended after the migration: the totals' triggers read its stored counts.
    assert total == {
        "input_tokens": 11,
        "input_tokens_details": {"cached_tokens": 2},
        "output_tokens": 16,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 27,
    }


def test_a_turn_document_is_stored_once_and_collected_when_unused(target: Target) -> None:
    async def main() -> tuple[int, int, int, list[int]]:
        db = await Database.open(target("documents.db"))
        statements: list[int] = []

        async def key_of(tx: Any) -> int:
            before = db.counters()["write_statements"]
            key = await turn_documents.key_of(tx, MANIFEST)
            statements.append(db.counters()["write_statements"] - before)
            return key

        try:

            async def twice(tx: Any) -> int:
                first = await key_of(tx)
                return first if first == await key_of(tx) else -1

            key = await db.write(twice)
            removed = await db.write(lambda tx: turn_documents.collect(tx))
            again = await db.write(lambda tx: turn_documents.collect(tx))
        finally:
            await db.close()
        return key, removed, again, statements

    key, removed, again, statements = asyncio.run(main())
    assert key > 0 and removed == 1 and again == 0
    # A new document is looked up and stored; a known one is only looked up.
    assert statements == [2, 1]
