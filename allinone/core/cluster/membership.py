"""This Core process's seat among the processes that share one database.

`Membership` owns the process's row (`storage.cluster`): `join` records it, the beat task
renews its heartbeat, records which Runtimes this process holds connections of, and
looks for peers that went silent; `leave` closes the row on a clean stop.

A peer is gone when it stopped beating for `silent_after_seconds`, or at once when it
ran on this host and its process id no longer exists (a kill -9 is noticed at the next
beat, not after the silence). Exactly one surviving process wins the compare-and-set
that marks it `lapsed` and hands its running turns to `on_peer_lapsed` (the crash rules:
continue from a checkpoint by a re-claim, or fail naming the operation in flight), again
at each beat until that succeeds.

A process that finds its own row marked lapsed (it was silent, a peer recovered its
turns) must not go on: `on_lapsed` is called once and the composition root stops it.

With `shared` False (the embedded SQLite default: one process per data directory) no
peer can exist: every earlier process is gone, and the start-up recovery covers all
running turns, as before. Nothing then needs a heartbeat, so the row is written only when
the process joins and when its Runtime connections change (no durable write every few
seconds on a laptop), and the process counts as live until it stops. `shared` is True on
PostgreSQL.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import partial

from allinone.core.ids import Clock, Ids
from allinone.core.tasks import cancel_and_wait
from storage import cluster
from storage.database import Database, Tx
from storage.errors import StorageError

log = logging.getLogger(__name__)

PRUNE_AFTER_SECONDS = 7 * 86400


@dataclass(frozen=True)
class ClusterTimers:
    # How often a process renews its heartbeat and looks at its peers.
    heartbeat_seconds: float = 5.0
    # A process that did not beat for this long is gone; its turns are recovered.
    silent_after_seconds: int = 20
    # How long a queued turn stays reserved for the process preparing it.
    reservation_seconds: int = 120

    def __post_init__(self) -> None:
        if self.heartbeat_seconds * 2 >= self.silent_after_seconds:
            raise ValueError("a process must beat at least twice before it counts as gone")


def pid_exists(pid: int) -> bool:
    """Whether a process with this id exists on this host."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class Membership:
    def __init__(
        self,
        db: Database,
        ids: Ids,
        clock: Clock,
        *,
        shared: bool,
        timers: ClusterTimers | None = None,
        devices: Callable[[], list[str]] = list,
        changes: Callable[[], asyncio.Event] | None = None,
    ) -> None:
        """`devices()` names the Runtimes connected to this process now; `changes()` gives
        an event set when that may have changed. `on_peer_lapsed(process_id)` recovers a
        gone peer's turns (set by the composition root before `start`)."""
        self._db = db
        self._clock = clock
        self.shared = shared
        self.timers = timers or ClusterTimers()
        self.process_id = ids.new("proc")
        # When `join` recorded this process (its clock's seconds); None before.
        self.joined_at: int | None = None
        self.host = socket.gethostname()
        self.pid = os.getpid()
        self.devices = devices
        self._changes = changes
        self.on_peer_lapsed: Callable[[str], Awaitable[object]] | None = None
        self._on_lapsed: Callable[[], None] | None = None
        self._lapsed = False
        # Peers this process marked lapsed whose turns it has not yet recovered.
        self._unrecovered: set[str] = set()
        self._poke = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def join(self) -> None:
        """Record this process (durable when this returns). Without peers, every earlier
        process row is closed: none of them can still be running."""
        now = self._clock.now()

        async def job(tx: Tx) -> None:
            if not self.shared:
                for process_id in await cluster.silent(tx, now + 1):
                    await cluster.lapse(tx, process_id, now + 1, now)
            await cluster.prune(tx, now - PRUNE_AFTER_SECONDS)
            await cluster.register(tx, self.process_id, self.host, self.pid, now)

        await self._db.write(job)
        self.joined_at = now
        # Only news when peers share the database; an embedded start shows its banner alone.
        level = logging.INFO if self.shared else logging.DEBUG
        log.log(level, "core process %s joined (pid %d)", self.process_id, self.pid)

    def since(self) -> int:
        """The oldest heartbeat a live process may have."""
        return self._clock.now() - self.timers.silent_after_seconds

    def start(self, on_lapsed: Callable[[], None] | None = None) -> None:
        """Beat until `leave`; `on_lapsed` is called if peers found this process gone."""
        self._on_lapsed = on_lapsed
        self._task = asyncio.create_task(self._run(), name="cluster-membership")

    def connections_changed(self) -> None:
        """This process's set of Runtime connections changed: record it soon."""
        self._poke.set()

    async def leave(self) -> None:
        """Stop beating and close this process's row (its connections are forgotten)."""
        if self._task is not None:
            await cancel_and_wait(self._task)
        if self._lapsed:
            return
        stop = partial(cluster.stop, process_id=self.process_id, now=self._clock.now())
        with contextlib.suppress(StorageError):
            await self._db.write(stop)

    def exclusive(
        self, name: str, every_seconds: float, fn: Callable[[], Awaitable[object]]
    ) -> Callable[[], Awaitable[None]]:
        """`fn` wrapped to run once per `every_seconds` slot across the processes (the
        one that claims the slot runs it; with no peers, always)."""

        async def run() -> None:
            if self.shared:
                now = self._clock.now()
                claim = partial(
                    cluster.claim_firing,
                    job=name,
                    slot=int(now // every_seconds),
                    process_id=self.process_id,
                    now=now,
                )
                if not await self._db.write(claim):
                    return
            await fn()

        return run

    async def beat(self) -> None:
        """One heartbeat: renew the row, record the connections, recover gone peers."""
        now = self._clock.now()
        devices = sorted(set(self.devices()))

        async def job(tx: Tx) -> bool:
            if not await cluster.beat(tx, self.process_id, now):
                return False
            await cluster.connected(tx, self.process_id, devices, now)
            return True

        if not await self._db.write(job):
            self._found_lapsed()
            return
        if self.shared:
            await self._sweep_peers(now)

    async def _run(self) -> None:
        while not self._lapsed:
            try:
                await self.beat()
            except StorageError as exc:
                log.warning("core process heartbeat failed: %s", exc)
            waits = {asyncio.ensure_future(self._poke.wait())}
            if self._changes is not None:
                waits.add(asyncio.ensure_future(self._changes().wait()))
            try:
                await asyncio.wait(
                    waits,
                    timeout=self.timers.heartbeat_seconds if self.shared else None,
                    return_when=asyncio.FIRST_COMPLETED,
                )
            finally:
                for waiter in waits:
                    waiter.cancel()
            self._poke.clear()

    async def _sweep_peers(self, now: int) -> None:
        rows = await self._db.read(partial(cluster.live, since=0))
        for row in rows:
            if row["id"] == self.process_id:
                continue
            silent = int(row["heartbeat_at"]) < now - self.timers.silent_after_seconds
            vanished = row["host"] == self.host and not pid_exists(int(row["pid"]))
            if not (silent or vanished):
                continue
            # The compare-and-set's bound: any heartbeat it ever wrote (the peer may have
            # beaten just now, in which case it is live and the mark must fail).
            bound = now + 1 if vanished else now - self.timers.silent_after_seconds
            won = await self._db.write(
                partial(cluster.lapse, process_id=row["id"], older_than=bound, now=now)
            )
            if not won:
                continue
            log.warning(
                "core process %s (pid %s on %s) is gone; recovering its turns",
                row["id"],
                row["pid"],
                row["host"],
            )
            self._unrecovered.add(str(row["id"]))
        await self._recover_lapsed()

    async def _recover_lapsed(self) -> None:
        """Recover the turns of each peer this process marked lapsed. No other process
        will (the mark is won once), so a recovery that met a storage fault is tried
        again at the next beat; recovering a turn twice changes nothing."""
        for process_id in sorted(self._unrecovered):
            if self.on_peer_lapsed is not None:
                try:
                    await self.on_peer_lapsed(process_id)
                except StorageError as exc:
                    log.warning(
                        "recovering the turns of core process %s failed (%s);"
                        " trying again at the next heartbeat",
                        process_id,
                        exc,
                    )
                    continue
            self._unrecovered.discard(process_id)

    def _found_lapsed(self) -> None:
        if self._lapsed:
            return
        self._lapsed = True
        log.error(
            "core process %s was marked gone by a peer (it stopped beating); stopping",
            self.process_id,
        )
        if self._on_lapsed is not None:
            self._on_lapsed()
