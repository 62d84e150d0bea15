"""The turn queue (DESIGN.md section 4, step 2).

The orchestrator wakes when a turn is admitted, a device's declaration changes or the
retry interval passes; for each queued turn not already running here it selects a
connected device whose declared capabilities cover what the turn needs and runs the
turn's `TurnExecution` (turn.py) as a task it owns. A turn suspended for a re-claim (phase
`resuming`, see recovery.py) is scheduled the same way and continues from its
checkpoint on the configuration it is pinned to. A turn no device can run stays
queued, unless its environment failed to prepare. Signals from admission (a
cancellation, an input for a running turn, a lapsed lease) reach the turn's execution
through it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from functools import partial
from typing import Any

from allinone.core import overlays
from allinone.core.cluster.membership import Membership
from allinone.core.environments import Environments
from allinone.core.gateway.preparations import Preparations
from allinone.core.gateway.registry import Registry
from allinone.core.ids import Clock, Ids
from allinone.core.orchestration import deadlines
from allinone.core.orchestration.collaborators import Collaborators
from allinone.core.orchestration.configuration import required_capabilities
from allinone.core.orchestration.credentials import RunCredentials
from allinone.core.orchestration.outcomes import Outcomes
from allinone.core.orchestration.projector import Projector
from allinone.core.orchestration.recovery import Recovery
from allinone.core.orchestration.timers import PRODUCTION, Timers
from allinone.core.orchestration.turn import HeldBack, SafePoint, TurnExecution, safe_point
from allinone.core.sessions import revisions
from allinone.core.tasks import cancel_and_wait
from storage import checkpoints, cluster, sessions, turns
from storage import environments as env_rows
from storage import overlays as overlay_rows
from storage.database import Database, Reader
from storage.errors import StorageError

log = logging.getLogger(__name__)


class Orchestrator:
    def __init__(
        self,
        db: Database,
        registry: Registry,
        projector: Projector,
        outcomes: Outcomes,
        ids: Ids,
        clock: Clock,
        environments: Environments | None = None,
        credentials: RunCredentials | None = None,
        timers: Timers = PRODUCTION,
        preparations: Preparations | None = None,
        membership: Membership | None = None,
    ) -> None:
        """`preparations` is the client the workspace operations share (a new one when
        omitted). With a `membership` whose database is shared by other Core processes,
        a queued turn is reserved for this process before it is prepared here, claims
        name this process, and the start-up recovery leaves live peers' turns alone."""
        self._parts = Collaborators(
            db=db,
            projector=projector,
            outcomes=outcomes,
            ids=ids,
            clock=clock,
            timers=timers,
            preparations=preparations or Preparations(ids.new),
            environments=environments,
            credentials=credentials,
            process_id=membership.process_id if membership is not None else None,
        )
        self._membership = membership
        self._db = db
        self._registry = registry
        self._wake = asyncio.Event()
        registry.listen(self.wake)
        self._inflight: dict[str, asyncio.Task[None]] = {}
        self._executions: dict[str, TurnExecution] = {}
        # Turns left queued for a reason a retry at once would meet again (the Runtime
        # had no room, storage failed): why, and the loop time before which they wait.
        self._held: dict[str, tuple[HeldBack, float]] = {}
        self._stopping = False
        self.draining = False
        self._drain: asyncio.Task[None] | None = None
        self._task: asyncio.Task[None] | None = None

    # Signals from admission (called after the admitting transaction committed).
    def wake(self) -> None:
        self._wake.set()

    def request_cancel(self, turn_id: str) -> None:
        execution = self._executions.get(turn_id)
        if execution is not None:
            execution.cancel.set()

    def request_pause(self, turn_id: str) -> None:
        """A pause command was accepted for this running turn."""
        execution = self._executions.get(turn_id)
        if execution is not None:
            execution.pause.set()

    def input_admitted(self, turn_id: str) -> None:
        """A steering message, function result or decision waits for this running turn."""
        execution = self._executions.get(turn_id)
        if execution is not None and execution.delivery is not None:
            execution.delivery.wake.set()

    def abandon(self, turn_id: str) -> None:
        """The turn's lease lapsed and it was failed: stop observing it here."""
        task = self._inflight.get(turn_id)
        if task is not None:
            task.cancel()

    # Lifecycle.
    async def start(self) -> None:
        if self._parts.environments is not None:
            await self._parts.environments.recover_interrupted()
        membership = self._membership
        since = membership.since() if membership is not None and membership.shared else None
        await Recovery(self._db, self._parts.outcomes).after_restart(since)
        self._task = asyncio.create_task(self._loop(), name="orchestrator")

    def start_drain(self, budget: float) -> bool:
        """`drain` as a task this orchestrator owns; False when already draining."""
        if self.draining:
            return False
        self._drain = asyncio.create_task(self.drain(budget), name="drain")
        return True

    async def drain(self, budget: float) -> None:
        """Stop claiming new work and ask every running turn to pause at its next
        checkpoint, suspended so that a later start continues it; wait at most `budget`
        seconds for them (a turn may also finish meanwhile)."""
        self.draining = True
        for execution in self._executions.values():
            execution.drain()
        if self._inflight:
            await asyncio.wait(list(self._inflight.values()), timeout=budget)

    async def stop(self, timeout: float) -> None:
        """Drain (stop claiming, pause running turns at a safe point) within `timeout`,
        then stop observing what is left: at the next start a turn continues from its
        checkpoint when nothing was in flight, and is failed as interrupted otherwise,
        never replayed."""
        self._stopping = True
        if self._task is not None:
            await cancel_and_wait(self._task)
        if self._drain is not None:
            await cancel_and_wait(self._drain)
        await self.drain(timeout)
        if self._inflight:
            _, pending = await asyncio.wait(list(self._inflight.values()), timeout=0)
            for task in pending:
                task.cancel()
            if pending:
                await asyncio.wait(pending, timeout=1.0)

    async def _loop(self) -> None:
        # A registry change sets `_wake` too (see __init__): one event to wait on, no
        # task per wake-up.
        while not self._stopping:
            try:
                await self._schedule()
            except StorageError as exc:
                # A passing fault (a server gone for a moment, a lost race with a peer)
                # must not end the scheduling: what was left is looked at again at the
                # next wake-up or after `retry_seconds`.
                log.warning("scheduling turns failed (%s); trying again", exc)
            if not self._wake.is_set():
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(self._parts.timers.retry_seconds):
                        await self._wake.wait()
            self._wake.clear()

    async def _schedule(self) -> None:
        now = asyncio.get_running_loop().time()
        self._held = {turn_id: held for turn_id, held in self._held.items() if held[1] > now}
        skip = frozenset(self._inflight)
        candidates = await self._db.read_now(partial(_candidates, skip=skip))
        for turn, session, checks in candidates:
            if turn["id"] in self._inflight or self._stopping or self.draining:
                continue
            if self._waits(turn["id"]):
                continue
            if session is not None and await self._expired(turn, session):
                continue
            if session is None or checks is None:
                continue  # a kill switch holds it queued until it is cleared
            needs = required_capabilities(session)
            if turn["status"] != "queued":
                needs.append("resume")  # a re-claim continues from a checkpoint's cursor
            connection = self._registry.select(session["harness"], needs)
            if connection is None:
                # Stays queued until a device declares what it needs, unless it can never
                # run because its environment failed to prepare.
                await self._fail_if_environment_failed(turn["id"], session)
                continue
            if not await self._reserve(turn):
                continue  # another Core process is preparing it
            execution = TurnExecution(self._parts, turn, session, connection, checks)
            run = self._run(turn["id"], execution)
            task = asyncio.create_task(run, name=f"turn-{turn['id']}")
            self._executions[turn["id"]] = execution
            self._inflight[turn["id"]] = task
            task.add_done_callback(partial(self._finished, str(turn["id"])))

    async def _expired(self, turn: dict[str, Any], session: dict[str, Any]) -> bool:
        """Whether a turn waiting to be re-claimed is past its deadline: it is failed
        then, whether or not a Runtime could take it (deadlines.py)."""
        if turn["status"] == "queued":
            return False
        now_ms = self._parts.clock.now_ms()
        if not deadlines.passed(deadlines.carried(turn, session, now_ms), now_ms):
            return False
        expire = partial(
            deadlines.expire,
            outcomes=self._parts.outcomes,
            turn_id=turn["id"],
            session=session,
            now_ms=now_ms,
        )
        if await self._db.write(expire):
            log.info("turn %s passed its deadline before it was re-claimed", turn["id"])
        return True

    async def _reserve(self, turn: dict[str, Any]) -> bool:
        """With peers, hold a queued turn for this process while it is prepared, so
        that one process prepares it; the claim is still the compare-and-set."""
        membership = self._membership
        if membership is None or not membership.shared or turn["status"] != "queued":
            return True
        now = self._parts.clock.now()
        until = now + membership.timers.reservation_seconds
        reserve = partial(
            cluster.reserve,
            turn_id=turn["id"],
            process_id=membership.process_id,
            until=until,
            now=now,
        )
        return bool(await self._db.write(reserve))

    async def _release(self, turn_id: str) -> None:
        membership = self._membership
        if membership is None or not membership.shared:
            return
        release = partial(cluster.release, turn_id=turn_id, process_id=membership.process_id)
        with contextlib.suppress(StorageError):
            await self._db.write(release)

    async def _fail_if_environment_failed(self, turn_id: str, session: dict[str, Any]) -> None:
        environment_id = session.get("environment_id")
        if not environment_id:
            return
        environment = await self._db.read(partial(env_rows.get_any, environment_id=environment_id))
        if environment is not None and environment["status"] == "failed":
            await self._parts.outcomes.fail_queued(
                turn_id,
                "sandbox_error",
                "The environment could not be initialized "
                f"({environment.get('failure') or 'initialization_failed'}).",
            )

    async def _run(self, turn_id: str, execution: TurnExecution) -> None:
        try:
            await execution.run()
        finally:
            if not execution.claimed:
                await self._release(turn_id)  # a turn left queued may go to any process

    def _waits(self, turn_id: str) -> bool:
        """Whether a turn held back is still to wait (it is looked at again at the next
        wake-up once its interval has passed)."""
        held = self._held.get(turn_id)
        return held is not None and held[1] > asyncio.get_running_loop().time()

    def _finished(self, turn_id: str, _task: asyncio.Task[None]) -> None:
        self._inflight.pop(turn_id, None)
        execution = self._executions.pop(turn_id, None)
        if execution is not None and execution.held_back is not None:
            until = asyncio.get_running_loop().time() + self._parts.timers.retry_seconds
            self._held[turn_id] = (execution.held_back, until)
        elif execution is not None and execution.claimed:
            # A run ended: its Runtime may have room again for the turns it had none for.
            for waiting, (why, _) in list(self._held.items()):
                if why is HeldBack.CAPACITY:
                    del self._held[waiting]
        self._wake.set()


_Candidate = tuple[dict[str, Any], dict[str, Any] | None, SafePoint | None]


async def _candidates(r: Reader, skip: frozenset[str]) -> list[_Candidate]:
    """In one read: turns suspended for a re-claim, then queued turns, except those in
    `skip` (already running here), each with its session and the checks of its safe
    point (None while a kill switch in force holds it). A suspended turn gets the
    session as its pinned configuration has it (`revisions.pinned`); the checks are the
    session's as it is now (its budget and the overlays in force)."""
    resumable = await checkpoints.resumable(r)
    suspended = {turn["id"] for turn in resumable}
    held: dict[str, tuple[dict[str, Any] | None, SafePoint | None]] = {}
    found: list[_Candidate] = []
    for turn in resumable + await turns.queued(r):
        if turn["id"] in skip:
            continue
        session_id = turn["session_id"]
        if session_id not in held:
            held[session_id] = await _session_and_checks(r, session_id)
        session, checks = held[session_id]
        if session is not None and turn["id"] in suspended:
            session = await revisions.pinned(r, session, turn.get("config_digest"))
        found.append((turn, session, checks))
    return found


async def _session_and_checks(
    r: Reader, session_id: str
) -> tuple[dict[str, Any] | None, SafePoint | None]:
    """The session, and its safe point's checks unless a kill switch in force holds
    its turns (then None)."""
    session = await sessions.get_any(r, session_id)
    if session is None:
        return None, None
    active = await overlay_rows.active(r, session["project_id"], session["agent_id"])
    if overlays.kill_switch(active) is not None:
        return session, None
    return session, await safe_point(r, session, active)
