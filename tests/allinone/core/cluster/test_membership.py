"""Memberships of Core processes sharing one real database file: heartbeats, a peer
gone (its process id no longer exists, or it stopped beating) recovered by exactly one
survivor, a process told it was found gone, and jobs that fire once per slot."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from functools import partial
from pathlib import Path

from allinone.core.cluster.membership import ClusterTimers, Membership
from allinone.core.ids import Clock, Ids
from storage import Database, StorageUnavailable, cluster
from storage.database import Tx


class StepClock(Clock):
    """A clock the test moves."""

    def __init__(self, now: int) -> None:
        self.at = now

    def now(self) -> int:
        return self.at

    def now_ms(self) -> int:
        return self.at * 1000


def _gone_pid() -> int:
    """The id of a process that has ended (and been reaped)."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_a_vanished_peer_on_this_host_is_recovered_once(tmp_path: Path) -> None:
    async def main() -> None:
        db = await Database.open(tmp_path / "db")
        try:
            clock = StepClock(1000)
            recovered: list[tuple[str, str]] = []
            members = [Membership(db, Ids(clock), clock, shared=True) for _ in range(3)]
            for member in members:
                await member.join()

                async def record(process_id: str, by: str = member.process_id) -> None:
                    recovered.append((by, process_id))

                member.on_peer_lapsed = record
            dead = members[0]
            await db.write(partial(_set_pid, process_id=dead.process_id, pid=_gone_pid()))
            await asyncio.gather(*(member.beat() for member in members[1:]))
            assert [gone for _, gone in recovered] == [dead.process_id]
            live = await db.read(partial(cluster.live, since=0))
            assert dead.process_id not in {row["id"] for row in live}
            # The process marked gone learns it at its next beat, and is told once.
            told: list[str] = []
            dead._on_lapsed = lambda: told.append("stop")
            await dead.beat()
            await dead.beat()
            assert told == ["stop"]
        finally:
            await db.close()

    asyncio.run(main())


def test_a_silent_peer_is_gone_only_after_the_silence(tmp_path: Path) -> None:
    async def main() -> None:
        db = await Database.open(tmp_path / "db")
        try:
            clock = StepClock(1000)
            timers = ClusterTimers(heartbeat_seconds=1.0, silent_after_seconds=10)
            quiet = Membership(db, Ids(clock), clock, shared=True, timers=timers)
            watcher = Membership(db, Ids(clock), clock, shared=True, timers=timers)
            quiet.host = "elsewhere"  # its process id cannot be looked up from here
            await db.write(
                partial(
                    cluster.register, process_id=quiet.process_id, host="elsewhere", pid=1, now=1000
                )
            )
            await watcher.join()
            gone: list[str] = []

            async def record(process_id: str) -> None:
                gone.append(process_id)

            watcher.on_peer_lapsed = record
            clock.at = 1010
            await watcher.beat()
            assert gone == []
            clock.at = 1011
            await watcher.beat()
            assert gone == [quiet.process_id]
        finally:
            await db.close()

    asyncio.run(main())


def test_one_process_closes_the_rows_of_every_earlier_one(tmp_path: Path) -> None:
    async def main() -> None:
        db = await Database.open(tmp_path / "db")
        try:
            clock = StepClock(1000)
            earlier = Membership(db, Ids(clock), clock, shared=False)
            await earlier.join()  # then it crashed: its row was never closed
            later = Membership(db, Ids(clock), clock, shared=False)
            await later.join()
            live = await db.read(partial(cluster.live, since=0))
            assert [row["id"] for row in live] == [later.process_id]
        finally:
            await db.close()

    asyncio.run(main())


def test_an_exclusive_job_runs_once_per_slot_among_the_processes(tmp_path: Path) -> None:
    async def main() -> None:
        db = await Database.open(tmp_path / "db")
        try:
            clock = StepClock(1000)
            runs: list[int] = []

            async def job() -> None:
                runs.append(clock.now())

            members = [Membership(db, Ids(clock), clock, shared=True) for _ in range(3)]
            wrapped = [m.exclusive("sweep", 60, job) for m in members]
            await asyncio.gather(*(w() for w in wrapped))
            assert runs == [1000]
            clock.at = 1061
            await asyncio.gather(*(w() for w in wrapped))
            assert runs == [1000, 1061]
            alone = Membership(db, Ids(clock), clock, shared=False).exclusive("sweep", 60, job)
            await alone()
            await alone()
            assert runs == [1000, 1061, 1061, 1061]
        finally:
            await db.close()

    asyncio.run(main())


def test_the_connections_of_a_process_are_recorded_and_closed_with_it(tmp_path: Path) -> None:
    async def main() -> None:
        db = await Database.open(tmp_path / "db")
        try:
            clock = StepClock(1000)
            devices = ["dev_a"]
            member = Membership(db, Ids(clock), clock, shared=True, devices=lambda: devices)
            await member.join()
            member.start()
            member.connections_changed()
            await member.beat()
            assert await db.read(partial(cluster.holders, device_id="dev_a")) == [member.process_id]
            await member.leave()
            assert await db.read(partial(cluster.holders, device_id="dev_a")) == []
            assert await db.read(partial(cluster.live, since=0)) == []
        finally:
            await db.close()

    asyncio.run(main())


async def _set_pid(tx: Tx, process_id: str, pid: int) -> None:
    await tx.execute("UPDATE core_processes SET pid = ? WHERE id = ?", (pid, process_id))


def test_a_recovery_that_met_a_storage_fault_is_tried_again_at_the_next_beat(
    tmp_path: Path,
) -> None:
    """Only the process that marked a peer gone recovers its turns: when the recovery
    meets a storage fault, that process tries it again at its next beat."""

    async def main() -> None:
        db = await Database.open(tmp_path / "db")
        try:
            clock = StepClock(1000)
            dead, watcher = (Membership(db, Ids(clock), clock, shared=True) for _ in range(2))
            await dead.join()
            await watcher.join()
            attempts: list[str] = []

            async def recover(process_id: str) -> None:
                attempts.append(process_id)
                if len(attempts) == 1:
                    raise StorageUnavailable("server gone for a moment", "unavailable")

            watcher.on_peer_lapsed = recover
            await db.write(partial(_set_pid, process_id=dead.process_id, pid=_gone_pid()))
            await watcher.beat()
            assert attempts == [dead.process_id]
            await watcher.beat()
            assert attempts == [dead.process_id] * 2
            await watcher.beat()  # recovered: not again
            assert attempts == [dead.process_id] * 2
        finally:
            await db.close()

    asyncio.run(main())
