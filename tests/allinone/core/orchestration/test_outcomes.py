"""How turns end, against a real SQLite file: a lapsed lease fails the turn
`lease_expired` and tells its owner to stop observing it, a running turn fails with its
reason through `fail_running`, and every status move is checked against the one
transition table before anything is written."""

from __future__ import annotations

import asyncio
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from allinone.core import render
from allinone.core.hub import Hub
from allinone.core.ids import Clock, Ids
from allinone.core.orchestration.outcomes import Outcomes
from allinone.core.orchestration.projector import Fenced, Projector, RunProjection
from allinone.core.orchestration.transitions import move, sources
from allinone.core.recorder import Recorder
from allinone.core.states import IllegalTransition, TurnStatus
from runtime.proto import run as wire
from storage import Database, leases, sessions, turns
from storage.database import Tx


async def _running(db: Database, lease_expires_at: int) -> None:
    """A session `s` with a turn `t` claimed with fencing token 7."""

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
        await turns.insert(tx, "t", "s", "a", 0)
        fields = {"fencing_token": "7", "started_at": 1, "lease_expires_at": lease_expires_at}
        assert await move(tx, "t", TurnStatus.IN_PROGRESS, (TurnStatus.QUEUED,), fields=fields)

    await db.write(job)


async def _outcomes(db: Database) -> Outcomes:
    clock = Clock()
    ids = Ids(clock)
    recorder = Recorder(Hub(), ids, clock)
    return Outcomes(db, recorder, Projector(recorder, ids, clock), clock)


async def _turn(db: Database) -> dict[str, Any]:
    row = await db.read(lambda r: turns.get(r, "t"))
    assert row is not None
    return row


def test_a_lapsed_lease_fails_the_turn_and_abandons_its_owner(tmp_path: Path) -> None:
    async def main() -> None:
        db = await Database.open(tmp_path / "o.db")
        try:
            await _running(db, lease_expires_at=1)
            abandoned: list[str] = []
            assert await (await _outcomes(db)).expire_leases(abandoned.append) == 1
            row = await _turn(db)
            assert (row["status"], row["error_code"]) == ("failed", "lease_expired")
            assert abandoned == ["t"]
            # Nothing is left for a second sweep.
            assert await db.read(lambda r: leases.expired(r, 2**62)) == []
        finally:
            await db.close()

    asyncio.run(main())


def test_a_live_lease_is_left_running(tmp_path: Path) -> None:
    async def main() -> None:
        db = await Database.open(tmp_path / "o.db")
        try:
            await _running(db, lease_expires_at=2**62)
            abandoned: list[str] = []
            assert await (await _outcomes(db)).expire_leases(abandoned.append) == 0
            assert (await _turn(db))["status"] == "in_progress"
            assert abandoned == []
        finally:
            await db.close()

    asyncio.run(main())


def test_fail_running_fails_only_the_current_claim(tmp_path: Path) -> None:
    async def main() -> None:
        db = await Database.open(tmp_path / "o.db")
        try:
            await _running(db, lease_expires_at=2**62)
            outcomes = await _outcomes(db)
            stale = RunProjection("s", "t", "6")
            await outcomes.fail_running("t", stale, "event_stream_incomplete", "lost")
            assert (await _turn(db))["status"] == "in_progress"
            current = RunProjection("s", "t", "7")
            await outcomes.fail_running("t", current, "event_stream_incomplete", "lost")
            row = await _turn(db)
            assert (row["status"], row["error_code"]) == ("failed", "event_stream_incomplete")
            assert row["error_message"] == "lost"
        finally:
            await db.close()

    asyncio.run(main())


def test_a_move_the_table_forbids_raises_before_anything_is_written() -> None:
    with pytest.raises(IllegalTransition):
        sources(TurnStatus.QUEUED, (TurnStatus.IN_PROGRESS,))
    with pytest.raises(IllegalTransition):
        sources(TurnStatus.IN_PROGRESS, (TurnStatus.COMPLETED,))
    assert sources(TurnStatus.WAITING, (TurnStatus.IN_PROGRESS, TurnStatus.WAITING)) == (
        "in_progress",
        "waiting",
    )
    assert sources(TurnStatus.FAILED) == ("in_progress", "queued", "waiting")


def _counts(n: int) -> wire.TokenCounts:
    return wire.TokenCounts(
        input_tokens=n,
        cached_input_tokens=0,
        output_tokens=2 * n,
        reasoning_output_tokens=0,
        total_tokens=3 * n,
    )


@pytest.mark.parametrize("reported_before", [None, 5])
def test_the_usage_a_done_frame_reports_is_the_ended_turns_and_counts_on_its_session(
    tmp_path: Path, reported_before: int | None
) -> None:
    """`done`'s usage replaces what a `usage` frame reported before (or stands alone),
    is stored with the turn's ending and is what the session's total adds; a claim that
    lost its fencing token writes none of it."""

    async def main() -> tuple[Any, ...]:
        db = await Database.open(tmp_path / "o.db")
        try:
            await _running(db, lease_expires_at=2**62)
            if reported_before is not None:
                usage = render.token_usage(_counts(reported_before))
                assert await db.write(lambda tx: turns.set_usage(tx, "t", usage, "7"))
            outcomes = await _outcomes(db)
            done = wire.Done(usage=wire.Usage(tokens=_counts(7)))

            async def settle(run: RunProjection, tx: Tx) -> None:
                await outcomes.settle(tx, run, done, cancelled=False)

            with pytest.raises(Fenced):
                await db.write(partial(settle, RunProjection("s", "t", "6")))
            stale = (await _turn(db))["usage"]
            await db.write(partial(settle, RunProjection("s", "t", "7")))
            row = await _turn(db)
            total = await db.read(lambda r: turns.usage_total(r, "s"))
            return stale, row["status"], row["usage"], total
        finally:
            await db.close()

    stale, status, usage, total = asyncio.run(main())
    before = None if reported_before is None else render.token_usage(_counts(reported_before))
    assert stale == before
    assert status == "completed"
    assert usage == render.token_usage(_counts(7))
    assert total == usage
