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
from functools import partial
from typing import Any

from allinone.core.gateway.connection import Connection
from allinone.core.gateway.preparations import (
    PreparationError,
    PreparationRefused,
    PreparationUnconfirmed,
    PreparationUnsent,
    Prepared,
)
from allinone.core.gateway.subscriptions import RunSubscription
from allinone.core.gateway.workspace import WorkspaceUnavailable, wire_uuid
from allinone.core.log_context import turn_fields
from allinone.core.orchestration.collaborators import Collaborators
from allinone.core.orchestration.configuration import configuration, still_declared
from allinone.core.orchestration.credentials import ResolutionFailed
from allinone.core.orchestration.delivery import Delivery, messages_of
from allinone.core.orchestration.observation import Observation
from allinone.core.orchestration.projector import RunProjection
from allinone.core.orchestration.transitions import move
from allinone.core.states import TurnStatus
from runtime.proto.errors import PreparationErrorCode
from runtime.proto.inputs import Message
from storage import interactions, leases, tenancy, turns
from storage.database import Tx

log = logging.getLogger(__name__)


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
    ) -> None:
        self._parts = parts
        self._turn_id: str = turn["id"]
        self._session = session
        self._connection = connection
        self.cancel = asyncio.Event()
        self.delivery: Delivery | None = None

    async def run(self) -> None:
        with turn_fields(self._session["id"], self._turn_id):
            try:
                await self._execute()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("turn %s could not be executed", self._turn_id)

    async def _execute(self) -> None:
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
        claim = await self._parts.db.write(self._claim)
        if claim is None:
            await self._parts.preparations.release(prepared)
            return
        log.debug("turn %s claimed", self._turn_id)
        run = RunProjection(self._session["id"], self._turn_id, claim)
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
        observation = Observation(parts, run, self._connection, run_sub, delivery)
        try:
            await observation.observe(self.cancel)
        finally:
            await delivery.stop()

    async def _environment_ready(self) -> bool:
        """Initialize the session's Environment once before its first turn."""
        environments = self._parts.environments
        environment_id = self._session.get("environment_id")
        if not environment_id or environments is None:
            return True
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
            await self._fail_queued(
                "sandbox_error", f"The environment could not be initialized ({exc.code})."
            )
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
        config = configuration(self._session, self._connection, resolved)
        try:
            return await parts.preparations.prepare(
                self._connection, self._session["id"], config, parts.timers.preparation_seconds
            )
        except PreparationUnsent:
            return None  # never reached the peer: the turn stays queued
        except PreparationUnconfirmed as exc:
            reason = exc.reason if exc.closed else "preparation_timeout"
            await self._fail_queued(
                "delivery_unknown", f"The preparation outcome is unknown ({reason})."
            )
        except PreparationRefused as exc:
            if exc.code == PreparationErrorCode.PREPARATION_CAPACITY:
                return None  # left queued for a later attempt
            await self._fail_queued(
                "execution_unavailable",
                f"The Runtime could not prepare the execution ({exc.code}).",
            )
        return None

    async def _claim(self, tx: Tx) -> str | None:
        """Claim the turn for this connection; its fencing token, or None when it is no
        longer queued or its cancellation was requested."""
        row = await turns.get(tx, self._turn_id)
        if row is None or row["status"] != TurnStatus.QUEUED or row["cancel_requested_at"]:
            return None
        epoch = await tenancy.next_counter(tx, "worker_epoch")
        token = str(await tenancy.next_counter(tx, "fencing_token"))
        now = self._parts.clock.now()
        moved = await move(
            tx,
            self._turn_id,
            TurnStatus.IN_PROGRESS,
            (TurnStatus.QUEUED,),
            fields={
                "worker_epoch": epoch,
                "fencing_token": token,
                "device_id": self._connection.device_id,
                "started_at": now,
                "phase": "running",
                "lease_expires_at": now + self._parts.timers.lease_seconds,
                "config_digest": self._session["request_hash"],
            },
        )
        if not moved:
            return None
        await leases.take_initial_input(tx, self._turn_id)
        await self._parts.outcomes.recorder.emit_turn(
            tx, "agent.session.turn.in_progress", self._turn_id
        )
        return token

    async def _input(self) -> list[Message]:
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
            )
        except PreparationRefused as exc:
            await self._fail_running(
                run, "execution_unavailable", f"The Runtime did not start the execution ({exc})."
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
