"""Tier 3: the rows several Core processes share (storage/cluster.py), on both backends."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from functools import partial

from storage import Database, cluster, tenancy
from storage.database import Tx
from tests.storage.conftest import Target, raw
from tests.storage.test_usage_total import create_session


def _turn(where: object, turn_id: str, session_id: str, status: str = "queued") -> None:
    with raw(where) as conn:  # type: ignore[arg-type]
        create_session(conn, session_id)
        conn.execute(
            "INSERT INTO turns (id, session_id, agent_id, status, created_at, completed_at)"
            " VALUES (?, ?, 'a', ?, 0, NULL)",
            (turn_id, session_id, status),
        )


def test_a_silent_process_is_lapsed_once_and_its_connections_go(target: Target) -> None:
    asyncio.run(_a_silent_process_is_lapsed_once_and_its_connections_go(target))


async def _a_silent_process_is_lapsed_once_and_its_connections_go(target: Target) -> None:
    db = await Database.open(target("db"))
    try:
        await db.write(partial(cluster.register, process_id="p1", host="h", pid=1, now=100))
        await db.write(partial(cluster.register, process_id="p2", host="h", pid=2, now=100))
        await db.write(partial(cluster.connected, process_id="p1", devices=["d1", "d2"], now=100))
        assert await db.read(partial(cluster.holders, device_id="d1")) == ["p1"]
        assert await db.write(partial(cluster.beat, process_id="p2", now=130))
        assert await db.read(partial(cluster.silent, older_than=110)) == ["p1"]
        lapses = [
            db.write(partial(cluster.lapse, process_id="p1", older_than=110, now=130))
            for _ in range(5)
        ]
        assert sorted(await asyncio.gather(*lapses)) == [False] * 4 + [True]
        assert await db.read(partial(cluster.holders, device_id="d1")) == []
        # The lapsed process finds out at its next beat.
        assert not await db.write(partial(cluster.beat, process_id="p1", now=131))
        live = await db.read(partial(cluster.live, since=0))
        assert [row["id"] for row in live] == ["p2"]
        # A live process is not lapsed: the compare-and-set is on its old heartbeat.
        assert not await db.write(partial(cluster.lapse, process_id="p2", older_than=110, now=130))
    finally:
        await db.close()


def test_connections_follow_the_set_given(target: Target) -> None:
    asyncio.run(_connections_follow_the_set_given(target))


async def _connections_follow_the_set_given(target: Target) -> None:
    db = await Database.open(target("db"))
    try:
        await db.write(partial(cluster.register, process_id="p1", host="h", pid=1, now=1))
        await db.write(partial(cluster.register, process_id="p2", host="h", pid=2, now=1))
        await db.write(partial(cluster.connected, process_id="p1", devices=["a", "b"], now=1))
        await db.write(partial(cluster.connected, process_id="p2", devices=["b"], now=1))
        await db.write(partial(cluster.connected, process_id="p1", devices=["c", "a"], now=2))
        shown = {row["id"]: row["devices"] for row in await db.read(cluster.processes)}
        assert shown == {"p1": ["a", "c"], "p2": ["b"]}
        await db.write(partial(cluster.stop, process_id="p2", now=3))
        assert await db.read(partial(cluster.holders, device_id="b")) == []
    finally:
        await db.close()


def test_a_queued_turn_is_reserved_by_one_process_at_a_time(target: Target) -> None:
    asyncio.run(_a_queued_turn_is_reserved_by_one_process_at_a_time(target))


async def _a_queued_turn_is_reserved_by_one_process_at_a_time(target: Target) -> None:
    where = target("db")
    db = await Database.open(where)
    try:
        _turn(where, "turn_1", "sess_1")
        reserve = partial(cluster.reserve, turn_id="turn_1", until=200, now=100)
        attempts = [db.write(partial(reserve, process_id=f"p{n}")) for n in range(6)]
        assert sorted(await asyncio.gather(*attempts)) == [False] * 5 + [True]
        holder = (await db.read(partial(_owner, turn_id="turn_1")))[0]
        # The holder may renew; another may not until it lapses or is released.
        assert await db.write(partial(reserve, process_id=holder))
        other = "p9"
        assert not await db.write(partial(reserve, process_id=other))
        assert await db.write(
            partial(cluster.reserve, turn_id="turn_1", process_id=other, until=400, now=300)
        )
        await db.write(partial(cluster.release, turn_id="turn_1", process_id=other))
        assert await db.write(partial(reserve, process_id="p0"))
    finally:
        await db.close()


def test_a_lapsed_process_gives_back_its_reservations(target: Target) -> None:
    asyncio.run(_a_lapsed_process_gives_back_its_reservations(target))


async def _a_lapsed_process_gives_back_its_reservations(target: Target) -> None:
    where = target("db")
    db = await Database.open(where)
    try:
        _turn(where, "turn_1", "sess_1")
        await db.write(partial(cluster.register, process_id="p1", host="h", pid=1, now=1))
        assert await db.write(
            partial(cluster.reserve, turn_id="turn_1", process_id="p1", until=1000, now=1)
        )
        assert not await db.write(
            partial(cluster.reserve, turn_id="turn_1", process_id="p2", until=1000, now=2)
        )
        assert await db.write(partial(cluster.lapse, process_id="p1", older_than=50, now=60))
        assert await db.write(
            partial(cluster.reserve, turn_id="turn_1", process_id="p2", until=1000, now=61)
        )
    finally:
        await db.close()


def test_orphaned_turns_are_those_no_live_process_owns(target: Target) -> None:
    asyncio.run(_orphaned_turns_are_those_no_live_process_owns(target))


async def _orphaned_turns_are_those_no_live_process_owns(target: Target) -> None:
    where = target("db")
    db = await Database.open(where)
    try:
        for n, owner in enumerate(("live", "gone", None)):
            _turn(where, f"turn_{n}", f"sess_{n}", "in_progress")
            with raw(where) as conn:
                conn.execute(
                    "UPDATE turns SET core_process_id = ? WHERE id = ?", (owner, f"turn_{n}")
                )
        await db.write(partial(cluster.register, process_id="live", host="h", pid=1, now=100))
        await db.write(partial(cluster.register, process_id="gone", host="h", pid=2, now=10))
        orphans = await db.read(partial(cluster.orphaned_turns, since=50))
        assert sorted(row["id"] for row in orphans) == ["turn_1", "turn_2"]
        mine = await db.read(partial(cluster.turns_of, process_id="live"))
        assert [row["id"] for row in mine] == ["turn_0"]
    finally:
        await db.close()


def test_a_firing_is_claimed_once_per_slot(target: Target) -> None:
    asyncio.run(_a_firing_is_claimed_once_per_slot(target))


async def _a_firing_is_claimed_once_per_slot(target: Target) -> None:
    db = await Database.open(target("db"))
    try:

        async def claim(process_id: str, slot: int, tx: Tx) -> bool:
            return await cluster.claim_firing(tx, "job", slot, process_id, 10)

        firsts = await asyncio.gather(*(db.write(partial(claim, f"p{n}", 1)) for n in range(4)))
        assert sorted(firsts) == [False, False, False, True]
        assert await db.write(partial(claim, "p0", 2))
        await db.write(partial(cluster.prune, before=11))
        assert await db.write(partial(claim, "p0", 1))  # forgotten once pruned
    finally:
        await db.close()


async def _owner(q: Tx, turn_id: str) -> list[str]:
    row = await q.fetchone("SELECT core_process_id FROM turns WHERE id = ?", (turn_id,))
    assert row is not None
    return [str(row["core_process_id"])]


def test_two_processes_batches_that_deadlock_are_both_committed_once(postgres_url: str) -> None:
    """Two processes' group-committed batches take the same two rows in opposite orders:
    the server aborts one of them as a deadlock, and that batch is run again whole (every
    job), so both batches commit, each change once."""
    asyncio.run(_two_processes_batches_that_deadlock_are_both_committed_once(postgres_url))


BUMP = "UPDATE core_processes SET heartbeat_at = heartbeat_at + 1 WHERE id = ?"


async def _two_processes_batches_that_deadlock_are_both_committed_once(url: str) -> None:
    first, second = await Database.open(url), await Database.open(url)
    try:
        await first.write(partial(cluster.register, process_id="p1", host="h", pid=1, now=0))
        await first.write(partial(cluster.register, process_id="p2", host="h", pid=2, now=0))
        holding = {"first": threading.Event(), "second": threading.Event()}
        runs: list[str] = []

        def job(name: str, row: str, other: str | None) -> Callable[[Tx], Awaitable[None]]:
            async def run(tx: Tx) -> None:
                runs.append(name)
                await tx.execute(BUMP, (row,))
                if other is not None:
                    # Each batch holds its first row before either takes its second (on
                    # the writer's thread: the batch is blocked, as on a lock wait).
                    holding[name].set()
                    assert holding[other].wait(30)

            return run

        await asyncio.gather(
            _batch(first, job("first", "p1", "second"), job("first+", "p2", None)),
            _batch(second, job("second", "p2", "first"), job("second+", "p1", None)),
        )
        with raw(url) as conn:
            beats = dict(conn.execute("SELECT id, heartbeat_at FROM core_processes"))
        assert beats == {"p1": 2, "p2": 2}
        # One batch lost the race and ran again, every job of it.
        assert len(runs) == 6
        assert runs.count("first") + runs.count("second") == 3
        assert runs.count("first") == runs.count("first+")
    finally:
        await first.close()
        await second.close()


async def _batch(db: Database, *jobs: Callable[[Tx], Awaitable[None]]) -> None:
    """The jobs, queued together so that they are committed in one batch."""
    commits = db.commits
    await asyncio.gather(*(db.write(job) for job in jobs))
    assert db.commits == commits + 1


def test_a_claims_counters_do_not_wait_for_another_processes_commit(postgres_url: str) -> None:
    """Worker epochs and fencing tokens come from sequences on PostgreSQL: a process
    takes them while another's batch that took some has not committed yet (with one
    counter row, it would wait for that commit, and two such batches could deadlock)."""
    asyncio.run(_a_claims_counters_do_not_wait_for_another_processes_commit(postgres_url))


async def _a_claims_counters_do_not_wait_for_another_processes_commit(url: str) -> None:
    first, second = await Database.open(url), await Database.open(url)
    try:
        took, release = threading.Event(), threading.Event()

        async def holding(tx: Tx) -> list[int]:
            taken = [await tenancy.next_counter(tx, key) for key in tenancy.SEQUENCES]
            took.set()
            assert release.wait(30)
            return taken

        async def taking(tx: Tx) -> list[int]:
            return [await tenancy.next_counter(tx, key) for key in tenancy.SEQUENCES]

        held = asyncio.ensure_future(first.write(holding))
        try:
            assert await asyncio.to_thread(took.wait, 30)
            taken = await asyncio.wait_for(second.write(taking), 10)
        finally:
            release.set()
        assert [a < b for a, b in zip(await held, taken, strict=True)] == [True, True]
    finally:
        await first.close()
        await second.close()


def test_counters_increase_on_both_backends(target: Target) -> None:
    async def main() -> list[int]:
        db = await Database.open(target("db"))
        try:
            return [
                await db.write(partial(tenancy.next_counter, key=key))
                for key in ("fencing_token", "fencing_token", "overlay_version", "overlay_version")
            ]
        finally:
            await db.close()

    first, second, third, fourth = asyncio.run(main())
    assert first < second and third < fourth


def test_counters_taken_together_are_each_counters_next_value_on_both_backends(
    backend: str, target: Target
) -> None:
    """`next_counters` takes the next value of each counter it is given (sequences and
    rows of `meta` mixed, in any order) in one statement per kind of counter, and gives
    each value back in the place of its counter."""
    keys = ("overlay_version", "fencing_token", "worker_epoch")

    async def together(tx: Tx) -> tuple[int, ...]:
        return await tenancy.next_counters(tx, *keys)

    async def main() -> tuple[list[int], tuple[int, ...], list[int], int]:
        db = await Database.open(target("db"))
        try:
            # Bring each counter to its own value, so that a value in a wrong place shows.
            for key, times in zip(keys, (1, 3, 5), strict=True):
                for _ in range(times):
                    await db.write(partial(tenancy.next_counter, key=key))
            before = [await db.write(partial(tenancy.next_counter, key=k)) for k in keys]
            statements = db.counters()["write_statements"]
            taken = await db.write(together)
            statements = db.counters()["write_statements"] - statements
            after = [await db.write(partial(tenancy.next_counter, key=k)) for k in keys]
            return before, taken, after, statements
        finally:
            await db.close()

    before, taken, after, statements = asyncio.run(main())
    assert len(set(before)) == 3
    assert list(taken) == [value + 1 for value in before]
    assert after == [value + 1 for value in taken]
    # SQLite keeps every counter in `meta`; PostgreSQL two of these in sequences.
    assert statements == (2 if backend == "postgresql" else 1)


def test_a_turn_another_process_is_reserving_is_skipped_not_waited_for(
    postgres_url: str,
) -> None:
    """On PostgreSQL a process does not wait for another's uncommitted reservation of a
    turn: it is told at once that the turn is not its own to prepare."""
    asyncio.run(_a_turn_another_process_is_reserving_is_skipped_not_waited_for(postgres_url))


async def _a_turn_another_process_is_reserving_is_skipped_not_waited_for(url: str) -> None:
    first, second = await Database.open(url), await Database.open(url)
    try:
        _turn(url, "turn_1", "sess_1")
        reserving, release = threading.Event(), threading.Event()

        async def holding(tx: Tx) -> bool:
            won = await cluster.reserve(tx, "turn_1", "p1", until=200, now=100)
            reserving.set()
            assert release.wait(30)
            return won

        held = asyncio.ensure_future(first.write(holding))
        try:
            assert await asyncio.to_thread(reserving.wait, 30)
            other = partial(cluster.reserve, turn_id="turn_1", process_id="p2", until=200, now=100)
            assert not await asyncio.wait_for(second.write(other), 10)
        finally:
            release.set()
        assert await held
        assert await second.read(partial(_owner, turn_id="turn_1")) == ["p1"]
        # Once the holder committed, the reservation is a compare-and-set as before.
        assert not await second.write(other)
    finally:
        await first.close()
        await second.close()
