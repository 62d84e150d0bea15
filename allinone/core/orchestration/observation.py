"""Observing a started Run until its turn settles (DESIGN.md section 4, steps 4-7).

Frames are projected in order, in group-committed transactions that also renew the
turn's lease while the Run is observed, frames or not. `done` settles the turn; once a
cancellation is sent, its confirmation (a `done` and an applied receipt, or a receipt
carrying the stopped turn's outcome) must arrive within the `cancel_unconfirmed` timer.
A lost observation never fabricates an outcome: the turn fails with
`event_stream_incomplete`, `cancel_unconfirmed`, `contract_violation` or
`storage_unavailable`, its effects unknown, and nothing is replayed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from allinone.core.gateway.connection import Connection, SendFailed
from allinone.core.gateway.subscriptions import ObservationError, RunSubscription
from allinone.core.gateway.workspace import WorkspaceUnavailable
from allinone.core.orchestration.collaborators import Collaborators
from allinone.core.orchestration.delivery import Delivery
from allinone.core.orchestration.pausing import CANCEL_ASKED, Pausing
from allinone.core.orchestration.projector import ContractViolation, Fenced, RunProjection
from allinone.core.orchestration.recovery import CONTINUES, INTERRUPTED, Recovery
from runtime.proto import run as wire_run
from runtime.proto.codec import Frame
from runtime.proto.errors import CancelErrorCode, ValidationError
from runtime.proto.interactions import CANCEL_ACK_CODES, InteractionDecisionAck
from storage import leases
from storage.database import Tx
from storage.errors import StorageUnavailable

log = logging.getLogger(__name__)


class _Woken:
    """What a wait for the next frame returns when something else happened first."""


_WOKEN = _Woken()


class _Ended:
    """What observing returns when the turn already ended (failed or fenced) there."""


_ENDED = _Ended()


@dataclass
class _Cancellation:
    """A cancellation sent to the Runtime: its receipt and the deadline for it."""

    receipt: asyncio.Future[InteractionDecisionAck]
    deadline: float


class Observation:
    def __init__(
        self,
        parts: Collaborators,
        run: RunProjection,
        connection: Connection,
        sub: RunSubscription,
        delivery: Delivery,
        pause: asyncio.Event | None = None,
        draining: Callable[[], bool] = lambda: False,
        captures: bool = True,
    ) -> None:
        """`captures`: whether the turn's end captures artifacts from a workspace (a
        turn without one settles in the transaction that projects its `done`)."""
        self._parts = parts
        self._captures = captures and parts.environments is not None
        self._settled = False
        self._pausing = Pausing(parts, run, connection, pause or asyncio.Event(), draining)
        self.paused = False
        self._run = run
        self._connection = connection
        self._sub = sub
        self._delivery = delivery
        self._cancellation: _Cancellation | None = None
        self._renewed = parts.clock.now()

    async def observe(self, cancel: asyncio.Event) -> None:
        """Project the run's frames until the turn settled or failed."""
        try:
            done = await self._until_done(cancel)
            if not isinstance(done, _Ended):
                await self._conclude(done)
        finally:
            self._connection.forget_ack(f"cancel:{self._run.turn_id}")
            receipt = self._cancellation.receipt if self._cancellation else None
            if receipt is not None and not receipt.done():
                receipt.cancel()
            elif receipt is not None and not receipt.cancelled():
                receipt.exception()  # retrieved: a late or failed receipt is expected

    async def _until_done(self, cancel: asyncio.Event) -> wire_run.Done | _Ended | None:
        """`done` (from a frame or a receipt), None when a sent cancellation was not
        confirmed in time, or `_ENDED` when the turn already ended otherwise."""
        loop = asyncio.get_running_loop()
        while True:
            if cancel.is_set() and self._cancellation is None:
                receipt = await self._send_cancel()
                deadline = loop.time() + self._parts.timers.cancel_unconfirmed_seconds
                self._cancellation = _Cancellation(receipt, deadline)
            if self._pausing.due() and self._cancellation is None:
                await self._pausing.send()
            sent = self._cancellation
            if sent is not None and (done := receipt_outcome(sent.receipt, self._run)) is not None:
                return done
            timeout = self._parts.timers.lease_renew_seconds
            if sent is not None:
                timeout = min(timeout, sent.deadline - loop.time())
                if timeout <= 0:
                    return None
            frame = await self._next(None if sent else cancel, timeout)
            if frame is None:
                await self._lost()
                return _ENDED
            outcome = await self._project_batch(frame)
            if outcome is not None:
                return outcome
            if self._run.over_budget and not cancel.is_set():
                log.info("turn %s went past its session's budget", self._run.turn_id)
                cancel.set()

    async def _project_batch(self, frame: Frame | _Woken) -> wire_run.Done | _Ended | None:
        """Project `frame` and whatever else is buffered (renewing the lease when due);
        `done`, `_ENDED` when the turn ended here, or None to keep observing."""
        batch: list[Frame] = [] if isinstance(frame, _Woken) else [frame, *self._sub.drain_nowait()]
        now = self._parts.clock.now()
        renew = now - self._renewed >= self._parts.timers.lease_renew_seconds
        if renew:
            self._renewed = now
        if not batch and not renew:
            return None
        # Without a cancellation, a pause or a capture between them, a `done` in this
        # batch settles the turn in the same transaction as the frames before it.
        inline = self._cancellation is None and not self._pausing.sent and not self._captures
        try:
            projected = await self._parts.db.write(
                partial(self._project, batch=batch, renew=renew, settle=inline)
            )
        except Fenced:
            log.warning("turn %s was fenced; its frames are ignored", self._run.turn_id)
            return _ENDED
        except StorageUnavailable as exc:
            await self._storage_lost(exc)
            return _ENDED
        if isinstance(projected, ContractViolation):
            await self._violated(projected)
            return _ENDED
        if isinstance(projected, wire_run.Done):
            self._settled = inline
        elif self._run.answered:  # something delivery may now send (see RunProjection)
            self._run.answered = False
            self._delivery.wake.set()
        return projected

    async def _lost(self) -> None:
        reason = self._sub.error.reason if self._sub.error else "closed"
        await self._delivery.stop()
        # Only a closed connection proves the Run is gone with it; a Run that may still
        # be running (a subscriber overflow) is never continued by a second one.
        if self._connection.closed.is_set():
            recovery = Recovery(self._parts.db, self._parts.outcomes)
            outcome = await recovery.run_lost(self._run, reason)
            if outcome == CONTINUES:
                log.info(
                    "turn %s: observation lost (%s); continues from its checkpoint",
                    self._run.turn_id,
                    reason,
                )
            elif outcome == INTERRUPTED:
                log.warning(
                    "turn %s: observation lost (%s) with work in flight; failed as "
                    "event_stream_incomplete",
                    self._run.turn_id,
                    reason,
                )
            return
        await self._fail(
            "event_stream_incomplete",
            f"Observation of the execution stopped ({reason}); its effects are unknown.",
        )

    async def _conclude(self, done: wire_run.Done | None) -> None:
        """End an observed turn: without `done` (a cancellation never confirmed) it fails
        `cancel_unconfirmed`; with it, outputs are captured and the turn settles."""
        await self._delivery.stop()
        if self._settled:
            return
        if done is None:
            await self._fail(
                "cancel_unconfirmed",
                "The cancellation was not confirmed in time; the turn's effects are unknown.",
            )
            return
        # A Run that stopped at a checkpoint for a pause, with nothing since, ends there
        # cancelled when a cancel was asked meanwhile, whatever the cancel's receipt says
        # (it may come after the Run ended).
        stopped = self._pausing.paused(done)
        if stopped and self._cancellation is None:
            phase = await self._pausing.apply()
            if phase != CANCEL_ASKED:
                self.paused = phase == "paused"
                return
        # Capture and settlement are bounded by their own timers; the lease is kept
        # while they run.
        keeper = asyncio.create_task(self._keep_lease(), name=f"lease-{self._run.turn_id}")
        try:
            captured = await self._capture()
            await self._settle(done, captured, cancelled_at_checkpoint=stopped)
        finally:
            keeper.cancel()
            await asyncio.wait({keeper})  # re-raises only this task's own cancellation

    async def _keep_lease(self) -> None:
        with contextlib.suppress(Fenced):
            while True:
                await asyncio.sleep(self._parts.timers.lease_renew_seconds)
                await self._parts.db.write(partial(self._project, batch=[], renew=True))

    async def _violated(self, violation: ContractViolation) -> None:
        """The Runtime broke the contract: stop the Run there (best effort) and fail the
        turn now, its effects unknown."""
        log.warning("turn %s: contract violation: %s", self._run.turn_id, violation.reason)
        await self._delivery.stop()
        if self._cancellation is None:
            with contextlib.suppress(SendFailed):
                await self._connection.send(
                    "prompt_cancel", self._run.turn_id, wire_run.PromptCancel(delivery_id="")
                )
        await self._fail(
            "contract_violation",
            f"The Runtime broke the protocol contract ({violation.reason}); "
            "the turn's effects are unknown.",
        )

    async def _storage_lost(self, exc: StorageUnavailable) -> None:
        """Frames that could not be stored are lost: the execution is cancelled and the
        turn fails, settled as soon as storage takes writes again (not at lease expiry)."""
        log.error("turn %s: its frames could not be stored (%s)", self._run.turn_id, exc.reason)
        await self._delivery.stop()
        receipt = await self._send_cancel()
        if self._cancellation is None:
            self._cancellation = _Cancellation(receipt, 0.0)  # retrieved at the end
        await self._fail(
            "storage_unavailable",
            "The turn's events could not be stored; its effects are unknown.",
        )

    async def _fail(self, code: str, message: str) -> None:
        await self._parts.outcomes.fail_running(self._run.turn_id, self._run, code, message)

    async def _send_cancel(self) -> asyncio.Future[InteractionDecisionAck]:
        delivery_id = f"cancel:{self._run.turn_id}"
        receipt = self._connection.expect_ack(delivery_id)
        try:
            await self._connection.send(
                "prompt_cancel", self._run.turn_id, wire_run.PromptCancel(delivery_id=delivery_id)
            )
        except SendFailed as exc:
            if not receipt.done():
                receipt.set_exception(ObservationError(str(exc)))
        return receipt

    async def _next(self, cancel: asyncio.Event | None, timeout: float) -> Frame | _Woken | None:
        """The next frame, None when observation ended, or `_WOKEN` when a cancellation
        was requested, the receipt arrived or `timeout` passed first. A frame already
        buffered is returned at once, without a task per waiter (what `_until_done`
        checks before calling this covers a cancellation, pause or receipt)."""
        if self._sub.ready():
            buffered: Frame | None = await self._sub.next()
            return buffered
        next_frame = asyncio.create_task(self._sub.next())
        waiters: set[asyncio.Future[Any]] = {next_frame}
        cancel_wait = asyncio.create_task(cancel.wait()) if cancel is not None else None
        if cancel_wait is not None:
            waiters.add(cancel_wait)
        pause_wait = None
        if cancel is not None and not self._pausing.sent:
            pause_wait = asyncio.create_task(self._pausing.requested.wait())
            waiters.add(pause_wait)
        receipt = self._cancellation.receipt if self._cancellation else None
        if receipt is not None and not receipt.done():
            waiters.add(receipt)
        try:
            await asyncio.wait(waiters, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        finally:
            if cancel_wait is not None:
                cancel_wait.cancel()
            if pause_wait is not None:
                pause_wait.cancel()
            if not next_frame.done():
                next_frame.cancel()
                await asyncio.wait({next_frame})  # re-raises only this task's cancellation
        if next_frame.cancelled():
            return _WOKEN
        frame: Frame | None = next_frame.result()
        return frame

    async def _project(
        self, tx: Tx, batch: list[Frame], renew: bool, settle: bool = False
    ) -> wire_run.Done | ContractViolation | None:
        """Apply the batch in order up to `done`, or up to a frame that breaks the
        contract (returned; what came before it is kept). With `settle`, `done` also
        settles the turn here, in the same transaction."""
        projector = self._parts.projector
        await projector.check_fence(tx, self._run)
        if renew:
            expires = self._parts.clock.now() + self._parts.timers.lease_seconds
            await leases.renew(tx, self._run.turn_id, expires)
        for frame in batch:
            if frame.type == "done":
                payload: wire_run.Done = frame.payload
                if settle:
                    await self._parts.outcomes.settle(tx, self._run, payload, cancelled=False)
                return payload
            try:
                await projector.apply(tx, self._run, frame)
            except ContractViolation as violation:
                return violation
        return None

    async def _capture(self) -> bool:
        """Capture artifacts from outputs/ at turn end; False when that failed."""
        environments = self._parts.environments
        if environments is None:
            return True
        try:
            await environments.capture(
                self._run.session_id,
                self._run.turn_id,
                self._connection,
                partial(self._parts.projector.check_fence, run=self._run),
            )
        except Fenced:
            log.warning("turn %s was fenced during artifact capture", self._run.turn_id)
            return False
        except (WorkspaceUnavailable, OSError) as exc:
            log.warning("turn %s: artifact capture failed: %s", self._run.turn_id, exc)
            return False
        return True

    async def _confirmed(self) -> bool | None:
        """After a cancellation: whether its receipt confirmed it applied (True) or
        refused it because the Run had already ended (False) before the deadline set when
        it was sent; None when it did not (lost, late, unprovable, or refused because the
        Runtime could not settle it). Without a cancellation: False."""
        sent = self._cancellation
        if sent is None:
            return False
        remaining = max(0.0, sent.deadline - asyncio.get_running_loop().time())
        try:
            ack = await asyncio.wait_for(asyncio.shield(sent.receipt), remaining)
            ack.check(ack.delivery_id, CANCEL_ACK_CODES)
        except (TimeoutError, ObservationError, ValidationError):
            return None
        if not ack.applied and ack.error_code != CancelErrorCode.RUN_INACTIVE:
            return None
        return ack.applied

    async def _settle(
        self, done: wire_run.Done, captured: bool, cancelled_at_checkpoint: bool = False
    ) -> None:
        """Settle from `done`; after a cancellation the receipt decides the outcome,
        unless the Run stopped at a checkpoint, where a cancel asked ends it cancelled."""
        confirmed = True if cancelled_at_checkpoint else await self._confirmed()
        try:
            # Through a storage fault the settlement is retried until storage is back,
            # rather than left for the lease to expire.
            await self._parts.db.write_durably(
                partial(
                    self._parts.outcomes.settle,
                    run=self._run,
                    done=done,
                    cancelled=bool(confirmed),
                    unconfirmed=confirmed is None,
                    captured=captured,
                )
            )
        except Fenced:
            log.warning("turn %s was fenced at settlement", self._run.turn_id)


def receipt_outcome(
    receipt: asyncio.Future[InteractionDecisionAck], run: RunProjection
) -> wire_run.Done | None:
    """The stopped turn's outcome when an applied cancellation receipt carries it (the
    Runtime sends one when no `done` was emitted); None otherwise."""
    if not receipt.done() or receipt.cancelled() or receipt.exception() is not None:
        return None
    ack = receipt.result()
    if ack.delivery_id != f"cancel:{run.turn_id}" or not ack.applied or ack.error_code:
        return None
    return ack.outcome
