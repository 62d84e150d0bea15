"""Tier 3: the recorder numbers a job's events in order against a real SQLite file."""

from __future__ import annotations

import asyncio
from functools import partial
from pathlib import Path

import pytest

from allinone.core.hub import Hub
from allinone.core.ids import Clock, Ids
from allinone.core.recorder import Recorder
from storage import Database, journal, sessions
from storage.database import Tx


async def _session(db: Database) -> None:
    async def job(tx: Tx) -> None:
        await tx.execute("INSERT INTO projects (id, name, created_at) VALUES ('p', 'p', 0)")
        await sessions.insert(
            tx,
            {
                "id": "s",
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

    await db.write(job)


def _emitting(recorder: Recorder, count: int, seen: list[int], fail: bool = False):  # type: ignore[no-untyped-def]
    async def job(tx: Tx) -> None:
        for n in range(count):
            await recorder.emit(tx, "s", "agent.session.idle", {"session_id": "s", "n": n})
            seen.append(await recorder.latest_seq(tx, "s"))
        if fail:
            raise RuntimeError("roll this job back")

    return job


def test_a_jobs_events_take_consecutive_sequences_and_the_session_row_follows(
    tmp_path: Path,
) -> None:
    async def main() -> tuple[list[int], int, list[int], int]:
        db = await Database.open(tmp_path / "r.db")
        await _session(db)
        clock = Clock()
        recorder = Recorder(Hub(), Ids(clock), clock)
        seen: list[int] = []
        await db.write(_emitting(recorder, 5, seen))
        # Two jobs of one batch, the second rolled back: neither disturbs the other.
        failed: list[int] = []
        with pytest.raises(RuntimeError):
            await asyncio.gather(
                db.write(_emitting(recorder, 3, seen)),
                db.write(_emitting(recorder, 4, failed, fail=True)),
            )
        await db.write(_emitting(recorder, 1, seen))
        latest = await db.read(partial(journal.latest_seq, session_id="s"))
        rows = await db.read(partial(journal.after, session_id="s", seq=0))
        await db.close()
        return seen, latest, [row["seq"] for row in rows], len(failed)

    seen, latest, stored, failed = asyncio.run(main())
    assert seen == list(range(1, 10))
    assert latest == 9
    assert stored == list(range(1, 10))
    assert failed == 4  # it ran, then its savepoint was rolled back


def test_a_callback_run_at_the_end_of_a_job_is_part_of_it(tmp_path: Path) -> None:
    async def main() -> tuple[str | None, str | None]:
        db = await Database.open(tmp_path / "e.db")

        def job(value: str, fail: bool = False):  # type: ignore[no-untyped-def]
            async def run(tx: Tx) -> None:
                async def write(v: str) -> None:
                    await tx.execute(
                        "INSERT INTO meta (key, value) VALUES ('k', ?)"
                        " ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                        (v,),
                    )
                    if fail:
                        raise RuntimeError("at the end")

                tx.before_end("k", partial(write, "replaced"))
                tx.before_end("k", partial(write, value))  # the later one wins

            return run

        await db.write(job("first"))
        first = await db.read(lambda r: r.fetchone("SELECT value FROM meta WHERE key = 'k'"))
        with pytest.raises(RuntimeError):
            await db.write(job("second", fail=True))
        after = await db.read(lambda r: r.fetchone("SELECT value FROM meta WHERE key = 'k'"))
        await db.close()
        return (first["value"] if first else None, after["value"] if after else None)

    assert asyncio.run(main()) == ("first", "first")
