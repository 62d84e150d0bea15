"""Tier 3: storage against a real SQLite file in a temporary directory and a real
PostgreSQL database (`target`); the tests of SQLite's files take `tmp_path` alone."""

from __future__ import annotations

import asyncio
import sqlite3
import subprocess
import sys
import textwrap
import threading
from collections.abc import Awaitable, Callable
from contextlib import closing
from functools import partial
from pathlib import Path

import pytest

from storage import (
    Conflict,
    Database,
    SchemaTooNew,
    SchemaTooOld,
    StorageUnavailable,
    leases,
    migrations,
    turn_inputs,
    turn_rows,
    turns,
)
from storage.database import Tx
from tests.storage.conftest import Target, add_sessions, raw


def run(coro):  # type: ignore[no-untyped-def]
    return asyncio.run(coro)


def test_migrations_apply_and_are_recorded(tmp_path: Path) -> None:
    """SQLite only: the file is in WAL mode."""

    async def main() -> int:
        db = await Database.open(tmp_path / "a.db")
        version = db.schema_version
        await db.close()
        return version

    version = run(main())
    assert version == migrations.available()[-1][0]
    conn = sqlite3.connect(tmp_path / "a.db")
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("SELECT MAX(version) FROM schema_version").fetchone()[0] == version
    conn.close()


def test_postgresql_migrations_apply_and_are_recorded(postgres_url: str) -> None:
    async def main() -> int:
        db = await Database.open(postgres_url)
        version = db.schema_version
        await db.close()
        return version

    version = run(main())
    assert version == migrations.available("postgresql")[-1][0]
    assert version == migrations.available()[-1][0]
    run(main())  # opened again: nothing left to apply
    with raw(postgres_url) as conn:
        assert conn.execute("SELECT MAX(version) AS v FROM schema_version")[0]["v"] == version
        # Each PostgreSQL migration recorded once (the baseline stands for those before it).
        recorded = conn.execute("SELECT COUNT(*) AS n FROM schema_version")[0]["n"]
        assert recorded == len(migrations.available("postgresql"))


def test_a_newer_schema_is_refused(target: Target) -> None:
    path = target("new.db")
    run(_open_close(path))
    with raw(path) as conn:
        conn.execute("INSERT INTO schema_version VALUES (9999, 0)")
    with pytest.raises(SchemaTooNew, match="newer than this build"):
        run(_open_close(path))


def test_an_open_without_upgrade_changes_no_schema(tmp_path: Path) -> None:
    """SQLite only: what the data directory's commands open. An earlier schema is
    refused and left as it was, a missing file is not made; this build's own opens."""
    path = tmp_path / "old.db"
    previous = migrations.latest() - 1
    with closing(sqlite3.connect(path, isolation_level=None)) as conn:
        conn.executescript(migrations.snapshot(previous))
        conn.execute("CREATE TABLE schema_version (version INTEGER PRIMARY KEY, applied_at INT)")
        for number, _ in migrations.available():
            if number <= previous:
                conn.execute("INSERT INTO schema_version VALUES (?, 0)", (number,))
    before = path.read_bytes()
    with pytest.raises(SchemaTooOld, match="older than this build's"):
        run(_open_close(path, upgrade=False))
    assert path.read_bytes() == before
    with pytest.raises(StorageUnavailable):
        run(_open_close(tmp_path / "missing.db", upgrade=False))
    assert not (tmp_path / "missing.db").exists()
    run(_open_close(path))  # upgraded
    run(_open_close(path, upgrade=False))


async def _open_close(path: Path | str, *, upgrade: bool = True) -> None:
    db = await Database.open(path, upgrade=upgrade)
    await db.close()


def test_group_commit_batches_and_isolates_a_failing_job(target: Target) -> None:
    async def main() -> tuple[list[object], int, list[str]]:
        db = await Database.open(target("g.db"))

        def insert(name: str, fail: bool = False):  # type: ignore[no-untyped-def]
            async def job(tx: Tx) -> str:
                await tx.execute("INSERT INTO meta (key, value) VALUES (?, 'v')", (name,))
                if fail:
                    raise ValueError("refused")
                return name

            return job

        before = db.commits
        results = await asyncio.gather(
            *(db.write(insert(f"k{i}", fail=(i == 3))) for i in range(10)), return_exceptions=True
        )
        commits = db.commits - before
        rows = await db.read(lambda r: r.fetchall("SELECT key FROM meta ORDER BY key"))
        await db.close()
        return results, commits, [row["key"] for row in rows]

    results, commits, keys = run(main())
    assert isinstance(results[3], ValueError)
    assert [r for i, r in enumerate(results) if i != 3] == [f"k{i}" for i in range(10) if i != 3]
    assert "k3" not in keys and len(keys) == 9
    assert commits < 10  # concurrent writers shared transactions


def test_a_job_alone_in_its_batch_that_raises_changes_nothing(target: Target) -> None:
    async def main() -> list[str]:
        db = await Database.open(target("alone.db"))

        async def refused(tx: Tx) -> None:
            await tx.execute("INSERT INTO meta (key, value) VALUES ('first', 'v')")
            await tx.execute("UPDATE meta SET value = 'changed' WHERE key = 'first'")
            raise ValueError("refused")

        with pytest.raises(ValueError, match="refused"):
            await db.write(refused)

        async def kept(tx: Tx) -> None:
            await tx.execute("INSERT INTO meta (key, value) VALUES ('second', 'v')")

        await db.write(kept)  # the writer goes on: no transaction was left open
        rows = await db.read(
            lambda r: r.fetchall("SELECT key FROM meta WHERE key IN ('first', 'second')")
        )
        await db.close()
        return [row["key"] for row in rows]

    assert run(main()) == ["second"]


def test_a_job_alone_in_its_batch_goes_on_past_a_failed_statement_on_sqlite(
    tmp_path: Path,
) -> None:
    """On SQLite a lone job that raises is rolled back (and is no commit); a failed
    statement undoes itself whole (here the two rows it had written before the third
    conflicted) and the job's other writes commit."""

    async def main() -> list[tuple[str, str]]:
        db = await Database.open(tmp_path / "statement.db")

        async def refused(tx: Tx) -> None:
            await tx.execute("INSERT INTO meta (key, value) VALUES ('d', 'x')")
            raise ValueError("refused")

        before = db.commits
        with pytest.raises(ValueError):
            await db.write(refused)
        assert db.commits == before  # rolled back, not committed: not counted as a commit

        async def job(tx: Tx) -> None:
            await tx.execute("INSERT INTO meta (key, value) VALUES ('a', 'before')")
            with pytest.raises(Conflict):
                await tx.execute(
                    "INSERT INTO meta (key, value) VALUES ('b', 'x'), ('c', 'x'), ('a', 'x')"
                )
            await tx.execute("UPDATE meta SET value = 'after' WHERE key = 'a'")

        await db.write(job)
        assert db.commits == before + 1
        rows = await db.read(
            lambda r: r.fetchall(
                "SELECT key, value FROM meta WHERE key IN ('a', 'b', 'c', 'd') ORDER BY key"
            )
        )
        await db.close()
        return [(row["key"], row["value"]) for row in rows]

    assert run(main()) == [("a", "after")]


def test_one_active_turn_per_session_is_enforced_by_the_database(target: Target) -> None:
    async def main() -> None:
        db = await Database.open(target("t.db"))

        async def setup(tx: Tx) -> None:
            await tx.execute("INSERT INTO projects (id, name, created_at) VALUES ('p', 'p', 0)")
            await tx.execute(
                "INSERT INTO sessions (id, project_id, agent_id, harness, created_at,"
                " last_active_at, agent, environment, metadata, vault_ids)"
                " VALUES ('s', 'p', 'a', 'scripted', 0, 0, '{}', '{}', '{}', '[]')"
            )
            await turns.insert(tx, "t1", "s", "a", 1)

        await db.write(setup)

        async def second(tx: Tx) -> None:
            await turns.insert(tx, "t2", "s", "a", 2)

        with pytest.raises(Conflict):
            await db.write(second)

        async def finish(tx: Tx) -> bool:
            return await turns.transition(
                tx, "t1", ("queued",), "completed", fields={"completed_at": 3}
            )

        assert await db.write(finish)
        assert not await db.write(finish)  # compare-and-set: terminal never moves again
        await db.write(second)
        await db.close()

    run(main())


def test_a_claim_skips_a_turn_whose_cancellation_was_requested_and_takes_its_inputs(
    target: Target,
) -> None:
    """The claim's compare-and-set (`uncancelled`) leaves a queued turn whose
    cancellation was requested where it is, and `take_initial_input` makes the admitted
    messages the turn's initial input and returns them in the order they were admitted,
    leaving other turns' messages and other kinds of input alone."""

    async def main() -> tuple[bool, bool, list[object], list[object], list[str]]:
        db = await Database.open(target("claim.db"))

        async def setup(tx: Tx) -> None:
            await add_sessions(tx, "s", "s2")
            await turns.insert(tx, "t1", "s", "a", 1)
            await turns.insert(tx, "t2", "s2", "a", 1)
            admitted = [
                ("t1", "message", "one"),
                ("t2", "message", "other"),
                ("t1", "cancel", "-"),
                ("t1", "message", "two"),
                ("t1", "message", "three"),
            ]
            for position, (turn, kind, text) in enumerate(admitted):
                await turn_inputs.insert(
                    tx,
                    {
                        "session_id": "s" if turn == "t1" else "s2",
                        "turn_id": turn,
                        "idempotency_key": None,
                        "batch_position": position,
                        "batch_hash": None,
                        "kind": kind,
                        "payload": {"text": text},
                        "state": "admitted",
                        "created_at": 1,
                    },
                )
            await turns.request_cancel(tx, "t2", 2)

        await db.write(setup)

        def claim(turn_id: str) -> Callable[[Tx], Awaitable[bool]]:
            async def job(tx: Tx) -> bool:
                return await turns.transition(
                    tx, turn_id, ("queued",), "in_progress", uncancelled=True
                )

            return job

        cancelled, claimed = await db.write(claim("t2")), await db.write(claim("t1"))
        taken = await db.write(partial(leases.take_initial_input, turn_id="t1"))
        again = await db.write(partial(leases.take_initial_input, turn_id="t1"))
        states = await db.read(lambda r: r.fetchall("SELECT state FROM turn_inputs ORDER BY seq"))
        await db.close()
        return cancelled, claimed, taken, again, [row["state"] for row in states]

    cancelled, claimed, taken, again, states = run(main())
    assert (cancelled, claimed) == (False, True)
    assert [row["payload"] for row in taken] == [  # type: ignore[index]
        {"text": "one"},
        {"text": "two"},
        {"text": "three"},
    ]
    assert again == []
    assert states == ["initial", "admitted", "admitted", "initial", "initial"]


def test_an_acknowledged_write_survives_a_killed_process(target: Target) -> None:
    path = target("crash.db")
    script = textwrap.dedent(f"""
        import asyncio, os, sys
        from storage import Database
        async def main():
            db = await Database.open({str(path)!r})
            async def job(tx):
                await tx.execute("INSERT INTO meta (key, value) VALUES ('durable', 'yes')")
            await db.write(job)
            print("acknowledged", flush=True)
            os._exit(9)  # no close, no checkpoint: as abrupt as a crash
        asyncio.run(main())
    """)
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=root, capture_output=True, timeout=60, check=False
    )
    assert done.stdout.strip() == b"acknowledged"
    assert done.returncode == 9
    with raw(path) as conn:
        rows = conn.execute("SELECT value FROM meta WHERE key = 'durable'")
    assert [tuple(row) for row in rows] == [("yes",)]


def test_the_database_files_are_private(tmp_path: Path) -> None:
    """SQLite only: the database file and its WAL are the owner's alone."""

    async def main() -> None:
        db = await Database.open(tmp_path / "p.db")

        async def job(tx: Tx) -> None:
            await tx.execute("INSERT INTO meta (key, value) VALUES ('k', 'v')")

        await db.write(job)
        for name in ("p.db", "p.db-wal"):
            assert (tmp_path / name).stat().st_mode & 0o077 == 0, name
        await db.close()

    asyncio.run(main())


def test_session_usage_is_the_sum_of_the_measured_turns(target: Target) -> None:
    """A turn that ended without a usage adds nothing: the known sum stays."""
    usage = {
        "input_tokens": 2,
        "input_tokens_details": {"cached_tokens": 1},
        "output_tokens": 3,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 5,
    }

    async def main() -> list[object]:
        db = await Database.open(target("u.db"))

        async def setup(tx: Tx) -> None:
            await tx.execute("INSERT INTO projects (id, name, created_at) VALUES ('p', 'p', 0)")
            await tx.execute(
                "INSERT INTO sessions (id, project_id, agent_id, harness, created_at,"
                " last_active_at, agent, environment, metadata, vault_ids)"
                " VALUES ('s', 'p', 'a', 'scripted', 0, 0, '{}', '{}', '{}', '[]')"
            )

        await db.write(setup)
        seen: list[object] = [await db.read(lambda r: turns.usage_total(r, "s"))]

        async def turn(tx: Tx, turn_id: str, measured: bool) -> None:
            await turns.insert(tx, turn_id, "s", "a", 1)
            if measured:
                columns = turn_rows.usage_columns(usage)
                sets = ", ".join(f"{column} = ?" for column in columns)
                await tx.execute(
                    f"UPDATE turns SET {sets} WHERE id = ?", (*columns.values(), turn_id)
                )
            seen.append(await turns.usage_total(tx, "s"))  # active: unknown
            await turns.transition(
                tx, turn_id, ("queued",), "completed", fields={"completed_at": 2}
            )

        for turn_id, measured in (("t1", True), ("t2", True), ("t3", False)):
            await db.write(lambda tx, t=turn_id, m=measured: turn(tx, t, m))
            seen.append(await db.read(lambda r: turns.usage_total(r, "s")))
        await db.close()
        return seen

    seen = run(main())
    doubled = {
        "input_tokens": 4,
        "input_tokens_details": {"cached_tokens": 2},
        "output_tokens": 6,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 10,
    }
    assert seen == [None, None, usage, None, doubled, None, doubled]


def test_read_now_runs_on_the_loop_thread_and_sees_committed_writes(tmp_path: Path) -> None:
    async def main() -> tuple[str | None, str, dict[str, int], dict[str, int]]:
        db = await Database.open(tmp_path / "n.db")
        threads: list[str] = []

        async def job(tx: Tx) -> None:
            await tx.execute("INSERT INTO meta (key, value) VALUES ('k', 'v')")

        async def read(r):  # type: ignore[no-untyped-def]
            threads.append(threading.current_thread().name)
            row = await r.fetchone("SELECT value FROM meta WHERE key = 'k'")
            return None if row is None else row["value"]

        await db.write(job)
        before = db.counters()
        value = await db.read_now(read)
        after = db.counters()
        await db.close()
        with pytest.raises(StorageUnavailable):
            await db.read_now(read)
        return value, threads[0], before, after

    value, thread, before, after = run(main())
    assert value == "v"
    assert thread == threading.current_thread().name  # no hand-off to a reader thread
    assert after["read_jobs"] == before["read_jobs"] + 1
    assert after["read_hops"] == before["read_hops"]
