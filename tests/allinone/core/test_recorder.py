"""Tier 3: the recorder numbers a job's events in order against a real SQLite file."""

from __future__ import annotations

import asyncio
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from allinone.core.hub import Hub
from allinone.core.ids import Clock, Ids
from allinone.core.recorder import Recorder, current_view, session_view
from storage import Database, journal, overlays, rewinds, sessions
from storage.database import Reader, Tx


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


# Steps that move the session `_session` makes through the states its snapshot shows.
_STEPS = (
    "INSERT INTO turns (id, session_id, agent_id, status, created_at)"
    " VALUES ('t1', 's', 'a', 'queued', 1)",
    "UPDATE turns SET status = 'in_progress', started_at = 2 WHERE id = 't1'",
    "UPDATE turns SET status = 'completed', completed_at = 3, tokens_input = 4,"
    " tokens_cached = 1, tokens_output = 5, tokens_reasoning = 0, tokens_total = 9 WHERE id = 't1'",
    "INSERT INTO turns (id, session_id, agent_id, status, created_at, started_at)"
    " VALUES ('t2', 's', 'a', 'waiting', 4, 4)",
    "INSERT INTO function_calls (session_id, turn_id, call_id, name, arguments, created_at)"
    " VALUES ('s', 't2', 'call_1', 'lookup', '{}', 5)",
    "UPDATE function_calls SET applied = 1 WHERE call_id = 'call_1'",
    "UPDATE turns SET status = 'completed', completed_at = 6 WHERE id = 't2'",
    "INSERT INTO session_rewinds (id, session_id, turns, hidden_turn_ids, created_at)"
    " VALUES ('rw_1', 's', 1, '[\"t2\"]', 7)",
    # A safety overlay on another agent of the project, then one on the whole project,
    # then that one cleared.
    "INSERT INTO overlays (id, version, project_id, agent_id, kind, value, reason, actor,"
    " created_at) VALUES ('ov_1', 1, 'p', 'b', 'tool_disabled', '\"shell\"', 'r', 'x', 8)",
    "INSERT INTO overlays (id, version, project_id, agent_id, kind, value, reason, actor,"
    " created_at) VALUES ('ov_2', 2, 'p', NULL, 'tool_disabled', '\"shell\"', 'r', 'x', 9)",
    "UPDATE overlays SET cleared_at = 10, cleared_by = 'x' WHERE id = 'ov_2'",
)


async def _facts_read_apart(r: Reader) -> dict[str, Any]:
    """Session `s`'s row with the facts `sessions.get_for_view` adds to it, each read
    by a statement of its own."""
    row = await sessions.get_any(r, "s")
    assert row is not None and "latest_turn_id" not in row
    latest = await r.fetchone(
        "SELECT id, status FROM turns_full WHERE session_id = 's'"
        " ORDER BY created_at DESC, id DESC LIMIT 1"
    )
    active = await r.fetchone(
        "SELECT 1 FROM turns WHERE session_id = 's'"
        " AND status IN ('queued', 'in_progress', 'waiting')"
    )
    return {
        **row,
        "latest_turn_id": None if latest is None else latest["id"],
        "latest_turn_status": None if latest is None else latest["status"],
        "has_active_turn": active is not None,
        "has_rewinds": bool(await rewinds.of_session(r, "s")),
        "has_overlays": bool(await overlays.active(r, row["project_id"], row["agent_id"])),
    }


def test_a_snapshot_from_the_rows_facts_equals_one_read_table_by_table(tmp_path: Path) -> None:
    """`sessions.get_for_view` reads the latest turn, an active turn and rewind markers
    with the session's row; the snapshot it gives must be the one the separate reads give,
    in every state the session passes through."""

    async def main() -> list[dict[str, Any]]:
        db = await Database.open(tmp_path / "v.db")
        await _session(db)
        views: list[dict[str, Any]] = []
        for step in ("", *_STEPS):
            if step:
                await db.write(partial(Tx.execute, sql=step))
            with_facts = await db.read(partial(sessions.get_for_view, session_id="s"))
            assert with_facts is not None
            fast = await db.read(partial(session_view, row=with_facts))
            apart = await db.read(_facts_read_apart)
            assert fast == await db.read(partial(session_view, row=apart)), step
            # What the API shows: the same snapshot, to its own project only.
            shown = await db.read(partial(current_view, session_id="s", project_id="p"))
            assert fast == shown, step
            assert await db.read(partial(current_view, session_id="s", project_id="q")) is None
            views.append(fast)
        await db.close()
        return views

    views = asyncio.run(main())
    statuses = [view["status"] for view in views]
    # A waiting turn with no open call shows as running; the open call is the action.
    assert statuses == [
        "idle",
        "in_progress",
        "in_progress",
        "idle",
        "in_progress",
        "requires_action",
        "in_progress",
        "idle",
        "idle",
        "idle",
        "idle",
        "idle",
    ]
    assert views[5]["required_actions"][0]["call_id"] == "call_1"
    assert views[3]["usage"]["total_tokens"] == 9
    assert [v["x_corebox"]["hidden_turn_ids"] for v in views[7:9]] == [[], ["t2"]]
    assert [[o["id"] for o in v["x_corebox"]["overlays"]] for v in views[8:]] == [
        [],
        [],
        ["ov_2"],
        [],
    ]
