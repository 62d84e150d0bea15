"""The life of one claimed turn up to its observation (DESIGN.md section 4).

`TurnExecution` initializes the session's Environment when needed, prepares an
execution on the selected device, checks the device still declares what the turn needs,
claims the turn (compare-and-set `queued -> in_progress` with a new worker epoch, a
monotonically increasing fencing token and a lease), starts the Run, and hands it to
`Observation` with a running `Delivery`. Each step that cannot proceed decides the
turn's fate here: left queued (nothing reached the peer, the device was busy or
withdrew), or failed with its reason (`delivery_unknown` when the Runtime's side of a
step is unknown).
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from enum import StrEnum
from functools import partial
from typing import Any

from allinone.core import budgets, overlays
from allinone.core.agents import CLI_HARNESSES
from allinone.core.gateway import suspension
from allinone.core.gateway.connection import Connection
from allinone.core.gateway.preparations import (
    PreparationError,
    PreparationRefused,
    PreparationTooLarge,
    PreparationUnconfirmed,
    PreparationUnsent,
    Prepared,
)
from allinone.core.gateway.subscriptions import RunSubscription
from allinone.core.gateway.suspension import suspend_id
from allinone.core.gateway.workspace import BindRefused, WorkspaceUnavailable, wire_uuid
from allinone.core.log_context import turn_fields
from allinone.core.orchestration import context, deadlines, manifest
from allinone.core.orchestration.collaborators import Collaborators
from allinone.core.orchestration.configuration import (
    configuration,
    still_declared,
    with_overlays,
)
from allinone.core.orchestration.credentials import ResolutionFailed
from allinone.core.orchestration.delivery import Delivery, messages_of
from allinone.core.orchestration.observation import Observation
from allinone.core.orchestration.outcomes import RESUMING
from allinone.core.orchestration.projector import RunProjection
from allinone.core.orchestration.recovery import restore_problem
from allinone.core.orchestration.transitions import move
from allinone.core.sessions import revisions
from allinone.core.states import TurnStatus
from runtime.proto.errors import PreparationErrorCode
from runtime.proto.inputs import Message
from storage import checkpoints, commands, execution_settings, interactions, leases, tenancy, turns
from storage.database import Reader, Tx
from storage.errors import StorageError

log = logging.getLogger(__name__)

# Core's codes for a turn whose frame was past the wire's frame limit and so never sent
# (the public code is `invalid_request`, `render.CORE_TURN_ERROR_CODES`).
INPUT_TOO_LARGE = "input_too_large"
CONFIGURATION_TOO_LARGE = "configuration_too_large"


class HeldBack(StrEnum):
    """Why a turn left queued should not be tried again at once: a retry would meet the
    same answer, so the scheduler waits before it (see `Orchestrator._schedule`)."""

    CAPACITY = "capacity"  # the Runtime had no room; a run ending may make some
    FAULT = "fault"  # storage or the connection failed; it is tried after the interval


class TurnExecution:
    """One queued turn on one connection. `cancel` and `delivery` are how the
    orchestrator's signals reach it (set before the claim commits, so a cancellation
    admitted right after it is never missed)."""

    def __init__(
        self,
        parts: Collaborators,
        turn: dict[str, Any],
        session: dict[str, Any],
        connection: Connection,
        checks: SafePoint,
    ) -> None:
        self._parts = parts
        self._checks = checks
        self._turn_id: str = turn["id"]
        self._session = session
        self._connection = connection
        self.cancel = asyncio.Event()
        self.pause = asyncio.Event()
        self.draining = False
        self.delivery: Delivery | None = None
        # Whether this execution claimed the turn (else it is still queued, or suspended).
        self.claimed = False
        self._context: context.TurnContext | None = None
        self._disabled: dict[str, int] = {}
        # A turn suspended at a checkpoint is re-claimed and continues from its cursor.
        self._resuming = turn.get("phase") == RESUMING and turn["status"] != TurnStatus.QUEUED
        self._cursor = ""
        self._initial: list[dict[str, Any]] | None = None
        # Set when the turn is left queued for a reason a retry at once would meet again.
        self.held_back: HeldBack | None = None
        # When the claim's deadline passes (Unix ms, kept in the row; deadlines.py).
        self._deadline_at_ms: int | None = None

    def drain(self) -> None:
        """Pause at the next checkpoint for a drain: the turn is left to be re-claimed."""
        self.draining = True
        self.pause.set()

    async def run(self) -> None:
        with turn_fields(self._session["id"], self._turn_id):
            try:
                await self._execute()
            except asyncio.CancelledError:
                raise
            except StorageError as exc:
                self.held_back = HeldBack.FAULT
                log.warning(
                    "turn %s could not be executed: storage failed (%s)%s",
                    self._turn_id,
                    exc,
                    "" if self.claimed else "; it stays queued and is tried again",
                )
            except Exception:
                self.held_back = HeldBack.FAULT
                log.exception("turn %s could not be executed", self._turn_id)

    async def _execute(self) -> None:
        if not await self._allowed():
            return
        if not await self._environment_ready():
            return
        prepared = await self._prepare()
        if prepared is None:
            return
        if not still_declared(self._connection, self._session):
            # Final check before claiming (seed 000): the Runtime withdrew the kind or a
            # capability while preparing. Release; the turn stays queued.
            log.info("turn %s: declaration withdrawn during preparation", self._turn_id)
            await self._parts.preparations.release(prepared)
            return
        try:
            claim = await self._parts.db.write(partial(self._claim, reused=prepared.reused))
        except Exception:
            # The claim did not commit (or is not known to): the Runtime's admission is
            # given back, else every retry finds its capacity taken.
            await self._parts.preparations.release(prepared)
            raise
        if claim is None:
            await self._parts.preparations.release(prepared)
            return
        log.debug("turn %s claimed", self._turn_id)
        self.claimed = True
        run = RunProjection(self._session["id"], self._turn_id, claim)
        run.price = budgets.price_of(self._session)
        run.limited = self._checks.limited
        run_sub = self._connection.subscribe_run(self._turn_id)
        try:
            if not await self._start(prepared, run):
                return
            await self._observe(run, run_sub)
        finally:
            self._connection.unsubscribe_run(self._turn_id)

    async def _observe(self, run: RunProjection, run_sub: RunSubscription) -> None:
        parts = self._parts
        delivery = Delivery(
            parts.db,
            self._connection,
            run,
            parts.projector,
            parts.outcomes.recorder,
            parts.ids,
            parts.clock,
            parts.timers,
        )
        self.delivery = delivery
        delivery.start()
        observation = Observation(
            parts,
            run,
            self._connection,
            run_sub,
            delivery,
            self.pause,
            lambda: self.draining,
            captures=bool(self._session.get("environment_id")),
        )
        timer = self._deadline(run)
        try:
            await observation.observe(self.cancel)
        finally:
            if timer is not None:
                timer.cancel()
            await delivery.stop()
        if observation.paused:
            await self._quiesce()

    async def _quiesce(self) -> None:
        """A paused turn's Environment is quiesced on its Runtime until a resume."""
        environment_id = self._session.get("environment_id")
        if environment_id:
            await suspension.quiesce(
                self._connection,
                wire_uuid(environment_id),
                suspend_id(self._turn_id),
                self._parts.timers.receipt_seconds,
            )

    def _deadline(self, run: RunProjection) -> asyncio.TimerHandle | None:
        """Cancel the turn when its deadline, as the claim took it from the turn's row,
        passes (it then fails with `turn_deadline_exceeded`): what is left of it, not
        the session's whole per-turn deadline, after a restart or a pause."""
        at = self._deadline_at_ms
        if at is None:
            return None
        seconds = deadlines.seconds_of(self._session)

        def passed() -> None:
            log.info("turn %s passed its deadline of %s s", self._turn_id, seconds)
            run.deadline_passed = True
            self.cancel.set()

        delay = max(0.0, (at - self._parts.clock.now_ms()) / 1000)
        return asyncio.get_running_loop().call_later(delay, passed)

    async def _allowed(self) -> bool:
        """The checks at the safe point before a claim: the session's budget and the
        overlays in force (egress); False when the turn was failed instead. Tools the
        overlays disable are noted for the preparation."""
        session = self._session
        checks = self._checks
        if checks.refusal is not None:
            await self._fail_queued(budgets.BUDGET_CODE, checks.refusal)
            return False
        if not self._harness_trusted():
            await self._fail_queued(
                "sandbox_error",
                f"The {session['harness']} harness runs its tools outside corebox's command"
                " sandbox, and the server's owner no longer trusts this project.",
            )
            return False
        active = checks.overlays
        provider = execution_settings.settings_of(session).get("model_provider") or {}
        refusal = overlays.egress_refusal(active, session, provider.get("base_url"))
        if refusal is not None:
            await self._fail_queued(overlays.EGRESS_CODE, refusal)
            return False
        self._disabled = overlays.disabled_tools(active)
        return True

    def _harness_trusted(self) -> bool:
        """A CLI harness runs only for a project the owner trusts, checked at every turn:
        trust can be withdrawn after the session was made."""
        environments = self._parts.environments
        if environments is None or self._session.get("harness") not in CLI_HARNESSES:
            return True
        return environments.grants.trusted(self._session["project_id"])

    async def _environment_ready(self) -> bool:
        """Initialize the session's Environment once before its first turn."""
        environments = self._parts.environments
        environment_id = self._session.get("environment_id")
        if not environment_id or environments is None:
            return True
        if self._resuming:  # a no-op unless a pause quiesced it on this Runtime
            await suspension.resume(
                self._connection,
                wire_uuid(environment_id),
                suspend_id(self._turn_id),
                self._parts.timers.receipt_seconds,
            )
        directory = (self._session.get("environment") or {}).get("workspace_directory")
        if directory:
            # Grants can be revoked after the environment was made: check at every turn.
            reason = environments.grants.refusal(self._session["project_id"], directory)
            if reason is not None:
                await self._fail_queued("sandbox_error", reason)
                return False
        try:
            await environments.ensure_initialized(environment_id, self._connection)
        except WorkspaceUnavailable as exc:
            await self._fail_queued("sandbox_error", initialization_failure(exc, directory))
            return False
        return True

    async def _prepare(self) -> Prepared | None:
        """A ready preparation, or None when the turn was failed or stays queued."""
        parts = self._parts
        try:
            resolved = await parts.credentials.resolve(self._session) if parts.credentials else None
        except ResolutionFailed as exc:
            await self._fail_queued("execution_unavailable", str(exc))
            return None
        offline = any(o["kind"] == "egress" for o in self._checks.overlays)
        config = with_overlays(
            configuration(self._session, self._connection, resolved), self._disabled, offline
        )
        try:
            return await parts.preparations.prepare(
                self._connection, self._session["id"], config, parts.timers.preparation_seconds
            )
        except PreparationTooLarge as exc:
            # Never sent, and never sendable: fail this turn alone, not the connection.
            await self._fail_queued(
                CONFIGURATION_TOO_LARGE, f"The execution was never prepared: {exc}."
            )
        except PreparationUnsent:
            self.held_back = HeldBack.FAULT
            return None  # never reached the peer: the turn stays queued
        except PreparationUnconfirmed as exc:
            reason = exc.reason if exc.closed else "preparation_timeout"
            await self._fail_queued(
                "delivery_unknown", f"The preparation outcome is unknown ({reason})."
            )
        except PreparationRefused as exc:
            if exc.code == PreparationErrorCode.PREPARATION_CAPACITY:
                self.held_back = HeldBack.CAPACITY
                return None  # left queued for a later attempt
            await self._fail_queued(
                "execution_unavailable",
                f"The Runtime could not prepare the execution ({exc.code}).",
            )
        return None

    async def _claim(self, tx: Tx, reused: bool = False) -> str | None:
        """Claim the turn for this connection; its fencing token, or None when it is no
        longer queued or its cancellation was requested. The model context the turn
        starts with is decided and recorded in the same transaction (a turn re-claimed at a
        checkpoint keeps the context it started with; a new Executor is sent the
        session's history before the turn to rebuild it from)."""
        if self._resuming:
            return await self._reclaim(tx, reused)
        config_digest = revisions.digest_of(self._session)
        decided = await context.decide(tx, self._session["id"], self._turn_id, reused)
        epoch, fence = await tenancy.next_counters(tx, "worker_epoch", "fencing_token")
        token = str(fence)
        now = self._parts.clock.now()
        deadline = deadlines.first(self._session, self._parts.clock.now_ms())
        moved = await move(
            tx,
            self._turn_id,
            TurnStatus.IN_PROGRESS,
            (TurnStatus.QUEUED,),
            uncancelled=True,
            fields={
                "worker_epoch": epoch,
                "fencing_token": token,
                "device_id": self._connection.device_id,
                "started_at": now,
                "phase": "running",
                "lease_expires_at": now + self._parts.timers.lease_seconds,
                "config_digest": config_digest,
                "agent_version": self._session.get("agent_version"),
                "core_process_id": self._parts.process_id,
                "reserved_until": None,
                "deadline_at_ms": deadline,
                # Encoded once, where they are stored (`storage.turn_rows`).
                "manifest": manifest.claimed(self._session, config_digest, self._checks.overlays),
                "context": decided.record,
            },
        )
        if not moved:
            return None
        self._deadline_at_ms = deadline
        self._context = decided
        self._initial = await leases.take_initial_input(tx, self._turn_id)
        recorder = self._parts.outcomes.recorder
        await recorder.emit_turn(tx, "agent.session.turn.in_progress", self._turn_id)
        await recorder.announce_queued_input(tx, self._turn_id)
        return token

    async def _reclaim(self, tx: Tx, reused: bool) -> str | None:
        """Re-claim a suspended turn from its checkpoint (its deadline and restore
        validation first): a new worker epoch and fencing token, compare-and-set on its
        state version. The checkpoint and the deadline are carried over to the new
        claim. None when the turn is no longer suspended, or failed because its deadline
        passed or its checkpoint cannot be restored."""
        row = await turns.get(tx, self._turn_id)
        if row is None or row["phase"] != RESUMING or row["cancel_requested_at"]:
            return None
        now_ms = self._parts.clock.now_ms()
        deadline = deadlines.carried(row, self._session, now_ms)
        if deadlines.passed(deadline, now_ms):
            if await self._parts.outcomes.deadline_passed(tx, row):
                log.info("turn %s passed its deadline before it was re-claimed", self._turn_id)
            return None
        problem = restore_problem(row, revisions.digest_of(self._session))
        if problem is not None:
            await self._parts.outcomes.unrestorable(tx, row, problem)
            return None
        fence, epoch = await tenancy.next_counters(tx, "fencing_token", "worker_epoch")
        token = str(fence)
        now = self._parts.clock.now()
        waiting = row["status"] == TurnStatus.WAITING
        moved = await checkpoints.reclaim(
            tx,
            self._turn_id,
            row["state_version"],
            {
                "worker_epoch": epoch,
                "fencing_token": token,
                "checkpoint_token": token,
                "device_id": self._connection.device_id,
                "core_process_id": self._parts.process_id,
                "phase": "waiting" if waiting else "running",
                "lease_expires_at": now + self._parts.timers.lease_seconds,
                "deadline_at_ms": deadline,
                "deadline_left_ms": None,
            },
        )
        if not moved:
            return None
        self._deadline_at_ms = deadline
        await commands.settle(tx, self._turn_id, "resume", "applied", None, now)
        await self._parts.outcomes.recorder.emit_turn_phase(tx, self._turn_id)
        if not reused:
            self._context = await context.decide(tx, self._session["id"], self._turn_id, False)
        self._cursor = row["checkpoint_cursor"]
        return token

    async def _input(self) -> list[Message]:
        """The turn's initial input (read by a fresh claim in its own transaction)."""
        rows = self._initial
        if rows is None:
            rows = await self._parts.db.read(
                partial(interactions.steering_inputs, turn_id=self._turn_id, state="initial")
            )
        return [message for row in rows for message in messages_of(row["payload"])]

    async def _start(self, prepared: Prepared, run: RunProjection) -> bool:
        """Start the Run; False when the turn was failed instead."""
        environment_id = self._session.get("environment_id")
        try:
            await self._parts.preparations.start(
                prepared,
                run.turn_id,
                await self._input(),
                self._parts.timers.start_seconds,
                wire_uuid(environment_id) if environment_id else "",
                self._context.history if self._context else None,
                self._cursor,
            )
        except PreparationRefused as exc:
            await self._fail_running(
                run, "execution_unavailable", f"The Runtime did not start the execution ({exc})."
            )
            return False
        except PreparationTooLarge as exc:
            await self._fail_running(
                run,
                INPUT_TOO_LARGE,
                f"The turn's input (with the history sent with it) was never delivered: {exc}.",
            )
            return False
        except PreparationError as exc:
            reason = exc.reason if isinstance(exc, PreparationUnconfirmed) else str(exc)
            await self._fail_running(
                run,
                "delivery_unknown",
                f"The start of the execution is unconfirmed ({reason or 'timeout'}).",
            )
            return False
        return True

    async def _fail_queued(self, code: str, message: str) -> None:
        await self._parts.outcomes.fail_queued(self._turn_id, code, message)

    async def _fail_running(self, run: RunProjection, code: str, message: str) -> None:
        await self._parts.outcomes.fail_running(run.turn_id, run, code, message)


@dataclass(frozen=True, slots=True)
class SafePoint:
    """The checks at the safe point before a claim, read with the turn: why the
    session's budget refuses it (or None), the overlays in force for it, and whether
    the session has a spend_control limit (its Run's usage reports are then checked).
    They are the session's as it is now, also for a turn re-claimed on its pinned
    configuration."""

    refusal: str | None
    overlays: list[dict[str, Any]]
    limited: bool


async def safe_point(r: Reader, session: dict[str, Any], active: list[dict[str, Any]]) -> SafePoint:
    """The safe point's checks for `session`, given the overlays in force for it."""
    limited = budgets.limit_of(session) is not None
    return SafePoint(await budgets.standing(r, session), active, limited)


def initialization_failure(exc: WorkspaceUnavailable, directory: str | None) -> str:
    """What a turn that could not initialize its environment says: a refused self-hosted
    directory by name (nothing ran, so new input tries again), else the code."""
    if isinstance(exc, BindRefused) and directory:
        return (
            f"The Runtime cannot use workspace_directory {directory} ({exc.code}): it must be"
            " an existing directory the Runtime serves. Nothing ran; new input tries again."
        )
    return f"The environment could not be initialized ({exc.code})."
