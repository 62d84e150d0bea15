"""A session's usage is a running total the database keeps: it must always equal the sum
over the session's turns that it replaced, whatever way the turns arrive or end, and a
database migrated from before the total existed starts from that sum."""

from __future__ import annotations

import asyncio
import json
import random
import sqlite3
from pathlib import Path
from typing import Any

from storage import Database, migrations, sessions, turn_rows, turns
from storage.database import Tx
from tests.storage.conftest import Raw, Target, raw

TERMINAL = ("completed", "failed", "cancelled")
USAGE_VERSION = 21  # the migration that introduced the running total


def _sum(values: list[Any]) -> int | None:
    """SQL's SUM: None over no values (or only absent ones)."""
    present = [value for value in values if value is not None]
    return sum(present) if present else None


def oracle(conn: Raw, session_id: str) -> dict[str, Any] | None:
    """The sum over the turns that ended with a usage, computed from the turns
    themselves; unknown while a turn is active or when no turn has a usage."""
    rows = conn.execute("SELECT status, usage FROM turns_full WHERE session_id = ?", (session_id,))
    if any(r["status"] not in TERMINAL for r in rows):
        return None
    usages = [json.loads(r["usage"]) for r in rows if r["usage"] is not None]
    if not usages:
        return None

    def total(*path: str) -> int | None:
        values: list[Any] = []
        for usage in usages:
            for key in path:
                usage = usage.get(key) if isinstance(usage, dict) else None
            values.append(usage)
        return _sum(values)

    return {
        "input_tokens": total("input_tokens"),
        "input_tokens_details": {"cached_tokens": total("input_tokens_details", "cached_tokens")},
        "output_tokens": total("output_tokens"),
        "output_tokens_details": {
            "reasoning_tokens": total("output_tokens_details", "reasoning_tokens")
        },
        "total_tokens": total("total_tokens"),
    }


def a_usage(rng: random.Random) -> str | None:
    """A usage as harnesses report it: sometimes none, sometimes without the details."""
    if rng.random() < 0.2:
        return None
    usage: dict[str, Any] = {
        "input_tokens": rng.randint(0, 500),
        "output_tokens": rng.randint(0, 500),
        "total_tokens": rng.randint(0, 1000),
    }
    if rng.random() < 0.7:
        usage["input_tokens_details"] = {"cached_tokens": rng.randint(0, 50)}
        usage["output_tokens_details"] = {"reasoning_tokens": rng.randint(0, 50)}
    return json.dumps(usage)


def create_session(conn: Raw | sqlite3.Connection, session_id: str) -> None:
    conn.execute(
        "INSERT INTO projects (id, name, created_at) VALUES ('p', 'p', 0) ON CONFLICT DO NOTHING"
    )
    conn.execute(
        "INSERT INTO sessions (id, project_id, agent_id, harness, created_at, last_active_at,"
        " agent, environment, metadata, vault_ids) VALUES (?, 'p', 'a', 'scripted', 0, 0,"
        " '{}', '{}', '{}', '[]')",
        (session_id,),
    )


def stored_usage(usage: str | None, *, stored_form: bool) -> dict[str, Any]:
    """The columns holding `usage`: its stored form (the counts of the standard shape,
    else `usage_other`) since migration 29, the one JSON column before."""
    return turn_rows.usage_columns(usage) if stored_form else {"usage": usage}


def play(
    conn: Raw | sqlite3.Connection,
    session_id: str,
    rng: random.Random,
    steps: int,
    *,
    stored_form: bool = True,
) -> None:
    """Turns that run and end one at a time, and turns that arrive already ended (an
    import or a copy does that), with and without usage (in both stored forms)."""
    for n in range(steps):
        turn_id = f"turn_{session_id}_{n}"
        if rng.random() < 0.3:
            usage = stored_usage(a_usage(rng), stored_form=stored_form)
            conn.execute(
                "INSERT INTO turns (id, session_id, agent_id, status, created_at, completed_at,"
                f" {', '.join(usage)}) VALUES (?, ?, 'a', ?, 0, 1{', ?' * len(usage)})",
                (turn_id, session_id, rng.choice(TERMINAL), *usage.values()),
            )
            continue
        conn.execute(
            "INSERT INTO turns (id, session_id, agent_id, status, created_at)"
            " VALUES (?, ?, 'a', 'queued', 0)",
            (turn_id, session_id),
        )
        conn.execute("UPDATE turns SET status = 'in_progress' WHERE id = ?", (turn_id,))
        usage = stored_usage(a_usage(rng), stored_form=stored_form)
        sets = ", ".join(f"{column} = ?" for column in usage)
        conn.execute(f"UPDATE turns SET {sets} WHERE id = ?", (*usage.values(), turn_id))
        conn.execute(
            "UPDATE turns SET status = ?, completed_at = 1 WHERE id = ?",
            (rng.choice(TERMINAL), turn_id),
        )


async def read_total(path: Path | str, session_id: str) -> dict[str, Any] | None:
    """The total as `turns.usage_total` reads it, checked against the one a session's
    snapshot takes from its row (`sessions.get_for_view`, then `turns.usage_of`)."""
    db = await Database.open(path)
    try:
        return await both_totals(db, session_id)
    finally:
        await db.close()


async def both_totals(db: Database, session_id: str) -> dict[str, Any] | None:
    total = await db.read(lambda r: turns.usage_total(r, session_id))
    row = await db.read(lambda r: sessions.get_for_view(r, session_id))
    if row is None:
        assert total is None
    else:
        assert turns.usage_of(row) == total
    return total


def test_the_running_total_equals_the_sum_over_the_turns(target: Target) -> None:
    path = target("usage.db")
    asyncio.run(read_total(path, "none"))  # creates and migrates the database
    rng = random.Random(7)
    checked = 0
    with raw(path) as conn:
        for index in range(12):
            session_id = f"sess_{index}"
            create_session(conn, session_id)
            assert asyncio.run(read_total(path, session_id)) is None  # no turn: unknown
            play(conn, session_id, rng, rng.randint(1, 12))
            assert asyncio.run(read_total(path, session_id)) == oracle(conn, session_id)
            checked += oracle(conn, session_id) is not None
    assert checked > 0  # some sessions had a measured turn: real sums were compared


def test_an_active_turn_makes_the_total_unknown(target: Target) -> None:
    path = target("active.db")

    async def main() -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
        db = await Database.open(path)
        try:

            async def setup(tx: Tx) -> None:
                await tx.execute("INSERT INTO projects (id, name, created_at) VALUES ('p', 'p', 0)")
                await tx.execute(
                    "INSERT INTO sessions (id, project_id, agent_id, harness, created_at,"
                    " last_active_at, agent, environment, metadata, vault_ids)"
                    " VALUES ('s', 'p', 'a', 'scripted', 0, 0, '{}', '{}', '{}', '[]')"
                )
                await tx.execute(
                    "INSERT INTO turns (id, session_id, agent_id, status, created_at,"
                    " completed_at, usage_other) VALUES ('t1', 's', 'a', 'completed', 0, 1, ?)",
                    (json.dumps({"input_tokens": 1, "output_tokens": 2, "total_tokens": 3}),),
                )

            await db.write(setup)
            before = await both_totals(db, "s")
            await db.write(lambda tx: turns.insert(tx, "t2", "s", "a", 2))
            during = await both_totals(db, "s")
            return before, during
        finally:
            await db.close()

    before, during = asyncio.run(main())
    assert before is not None and before["total_tokens"] == 3
    assert during is None


def test_a_database_from_before_the_total_is_migrated_to_the_sum(tmp_path: Path) -> None:
    """SQLite only: a database file from before the running total."""
    path = tmp_path / "old.db"
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("CREATE TABLE schema_version (version INTEGER PRIMARY KEY, applied_at INTEGER)")
    for version, sql in migrations.available():
        if version >= USAGE_VERSION:
            break
        for statement in migrations._statements(sql):
            conn.execute(statement)
        conn.execute("INSERT INTO schema_version VALUES (?, 0)", (version,))
    rng = random.Random(11)
    for index in range(6):
        create_session(conn, f"sess_{index}")
        play(conn, f"sess_{index}", rng, rng.randint(1, 10), stored_form=False)
    conn.close()

    for index in range(6):
        migrated = asyncio.run(read_total(path, f"sess_{index}"))
        with raw(path) as check:
            assert migrated == oracle(check, f"sess_{index}")
