"""The turn queue and the life of a claimed turn (DESIGN.md section 4).

For each queued turn the orchestrator selects a connected device whose declared
capabilities cover what the turn needs, prepares an execution there, claims the turn
(compare-and-set `queued -> in_progress` with a new worker epoch, a monotonically
increasing fencing token and a lease), starts the Run, delivers the client's inputs
while it runs, and projects its frames until `done` settles it. A lost observation never
fabricates an outcome: the turn fails with `event_stream_incomplete` or
`delivery_unknown`, effects unknown, and nothing is replayed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import tarfile
from functools import partial
from typing import Any

from allinone.core.environments import Environments
from allinone.core.gateway.connection import Connection, SendFailed
from allinone.core.gateway.registry import Registry
from allinone.core.gateway.subscriptions import (
    ObservationError,
    PreparationSubscription,
    RunSubscription,
)
from allinone.core.gateway.workspace import WorkspaceUnavailable, wire_uuid
from allinone.core.ids import Clock, Ids
from allinone.core.orchestration.credentials import ResolutionFailed, Resolved, RunCredentials
from allinone.core.orchestration.delivery import Delivery, messages_of
from allinone.core.orchestration.outcomes import Outcomes
from allinone.core.orchestration.projector import (
    ContractViolation,
    Fenced,
    Projector,
    RunProjection,
)
from allinone.core.orchestration.timers import PRODUCTION, Timers
from allinone.core.states import TurnStatus
from allinone.core.tasks import cancel_and_wait
from runtime.proto import execution as wire_exec
from runtime.proto import run as wire_run
from runtime.proto.capabilities import ALWAYS_REQUIRED, missing_capabilities
from runtime.proto.codec import Frame
from runtime.proto.errors import PreparationErrorCode
from runtime.proto.execution import PreparationState
from runtime.proto.inputs import Message
from runtime.proto.interactions import CANCEL_ACK_CODES, InteractionDecisionAck
from storage import environments as env_rows
from storage import interactions, sessions, tenancy, turns
from storage.database import Database, Tx
from storage.errors import StorageUnavailable

log = logging.getLogger(__name__)


class _Woken:
    """What a wait for the next frame returns when something else happened first."""


_WOKEN = _Woken()


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
    ) -> None:
        self._timers = timers
        self._environments = environments
        self._credentials = credentials
        self._db = db
        self._registry = registry
        self._projector = projector
        self._outcomes = outcomes
        self._ids = ids
        self._clock = clock
        self._wake = asyncio.Event()
        self._inflight: dict[str, asyncio.Task[None]] = {}
        self._cancels: dict[str, asyncio.Event] = {}
        self._deliveries: dict[str, Delivery] = {}
        self._stopping = False
        self._task: asyncio.Task[None] | None = None

    # Signals from admission (called after the admitting transaction committed).
    def wake(self) -> None:
        self._wake.set()

    def request_cancel(self, turn_id: str) -> None:
        event = self._cancels.get(turn_id)
        if event is not None:
            event.set()

    def input_admitted(self, turn_id: str) -> None:
        """A steering message, function result or decision waits for this running turn."""
        delivery = self._deliveries.get(turn_id)
        if delivery is not None:
            delivery.wake.set()

    def abandon(self, turn_id: str) -> None:
        """The turn's lease lapsed and it was failed: stop observing it here."""
        task = self._inflight.get(turn_id)
        if task is not None:
            task.cancel()

    # Lifecycle.
    async def start(self) -> None:
        if self._environments is not None:
            await self._environments.recover_interrupted()
        await self._outcomes.recover_interrupted()
        self._task = asyncio.create_task(self._loop(), name="orchestrator")

    async def stop(self, timeout: float) -> None:
        """Stop claiming; give running turns `timeout` to settle, then stop observing them
        (they are failed as interrupted at the next start, never replayed)."""
        self._stopping = True
        if self._task is not None:
            await cancel_and_wait(self._task)
        if self._inflight:
            _, pending = await asyncio.wait(list(self._inflight.values()), timeout=timeout)
            for task in pending:
                task.cancel()
            if pending:
                await asyncio.wait(pending, timeout=1.0)

    async def _loop(self) -> None:
        while not self._stopping:
            await self._schedule()
            changed = self._registry.changed
            wake = asyncio.create_task(self._wake.wait())
            registry = asyncio.create_task(changed.wait())
            await asyncio.wait(
                {wake, registry},
                timeout=self._timers.retry_seconds,
                return_when=asyncio.FIRST_COMPLETED,
            )
            wake.cancel()
            registry.cancel()
            self._wake.clear()

    async def _schedule(self) -> None:
        queued = await self._db.read(turns.queued)
        for turn in queued:
            if turn["id"] in self._inflight or self._stopping:
                continue
            session = await self._db.read(partial(sessions.get_any, session_id=turn["session_id"]))
            if session is None:
                continue
            connection = self._registry.select(session["harness"], required_capabilities(session))
            if connection is None:
                # Stays queued until a device declares what it needs, unless it can never
                # run because its environment failed to prepare.
                await self._fail_if_environment_failed(turn["id"], session)
                continue
            task = asyncio.create_task(
                self._execute(turn, session, connection), name=f"turn-{turn['id']}"
            )
            self._inflight[turn["id"]] = task
            task.add_done_callback(partial(self._finished, str(turn["id"])))

    async def _fail_if_environment_failed(self, turn_id: str, session: dict[str, Any]) -> None:
        environment_id = session.get("environment_id")
        if not environment_id:
            return
        environment = await self._db.read(partial(env_rows.get_any, environment_id=environment_id))
        if environment is not None and environment["status"] == "failed":
            await self._outcomes.fail_queued(
                turn_id,
                "sandbox_error",
                "The environment could not be initialized "
                f"({environment.get('failure') or 'initialization_failed'}).",
            )

    def _finished(self, turn_id: str, _task: asyncio.Task[None]) -> None:
        self._inflight.pop(turn_id, None)
        self._cancels.pop(turn_id, None)
        self._deliveries.pop(turn_id, None)
        self._wake.set()

    # The life of one turn.
    async def _execute(
        self, turn: dict[str, Any], session: dict[str, Any], connection: Connection
    ) -> None:
        turn_id = turn["id"]
        try:
            if not await self._environment_ready(turn, session, connection):
                return
            prepared = await self._prepare(turn, session, connection)
            if prepared is None:
                return
            executor_id, handle, prep_id, prep_sub = prepared
            if not still_declared(connection, session):
                # Final check before claiming (seed 000): the Runtime withdrew the kind
                # or a capability while preparing. Release; the turn stays queued.
                log.info("turn %s: declaration withdrawn during preparation", turn_id)
                await self._release(connection, prep_id, handle)
                return
            # Registered before the claim commits, so a cancellation admitted right after
            # it is never missed.
            cancel = self._cancels.setdefault(turn_id, asyncio.Event())
            claim = await self._claim(turn_id, session, connection)
            if claim is None:
                await self._release(connection, prep_id, handle)
                return
            run = RunProjection(session["id"], turn_id, claim)
            run_sub = connection.subscribe_run(turn_id)
            try:
                started = await self._start(
                    connection,
                    prep_id,
                    prep_sub,
                    executor_id,
                    handle,
                    run,
                    await self._input(turn_id),
                )
                if not started:
                    return
                delivery = Delivery(
                    self._db,
                    connection,
                    run,
                    self._projector,
                    self._outcomes.recorder,
                    self._ids,
                    self._clock,
                    self._timers,
                )
                self._deliveries[turn_id] = delivery
                delivery.start()
                try:
                    await self._observe(run, run_sub, cancel, connection)
                finally:
                    await delivery.stop()
            finally:
                connection.unsubscribe_run(turn_id)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("turn %s could not be executed", turn_id)

    async def _environment_ready(
        self, turn: dict[str, Any], session: dict[str, Any], connection: Connection
    ) -> bool:
        """Initialize the session's Environment once before its first turn."""
        environment_id = session.get("environment_id")
        if not environment_id or self._environments is None:
            return True
        directory = (session.get("environment") or {}).get("workspace_directory")
        if directory:
            # Grants can be revoked after the environment was made: check at every turn.
            reason = self._environments.grants.refusal(session["project_id"], directory)
            if reason is not None:
                await self._outcomes.fail_queued(turn["id"], "sandbox_error", reason)
                return False
        try:
            await self._environments.ensure_initialized(environment_id, connection)
        except WorkspaceUnavailable as exc:
            await self._outcomes.fail_queued(
                turn["id"],
                "sandbox_error",
                f"The environment could not be initialized ({exc.code}).",
            )
            return False
        return True

    async def _prepare(
        self, turn: dict[str, Any], session: dict[str, Any], connection: Connection
    ) -> tuple[str, str, str, PreparationSubscription] | None:
        try:
            resolved = await self._credentials.resolve(session) if self._credentials else None
        except ResolutionFailed as exc:
            await self._outcomes.fail_queued(turn["id"], "execution_unavailable", str(exc))
            return None
        prep_id = self._ids.new("prep")
        sub = connection.subscribe_preparation(prep_id)
        payload = wire_exec.ExecutionPrepare(
            session_id=session["id"], configuration=configuration(session, connection, resolved)
        )
        try:
            await connection.send("execution_prepare", prep_id, payload)
        except SendFailed:
            connection.unsubscribe_preparation(prep_id)
            return None  # never reached the peer: the turn stays queued
        while True:
            try:
                status = await sub.next(self._timers.preparation_seconds)
            except TimeoutError:
                status = None
            if status is None:
                connection.unsubscribe_preparation(prep_id)
                reason = sub.error.reason if sub.error else "preparation_timeout"
                await self._outcomes.fail_queued(
                    turn["id"],
                    "delivery_unknown",
                    f"The preparation outcome is unknown ({reason}).",
                )
                return None
            assert isinstance(status, wire_exec.PreparationStatus)
            if status.state is PreparationState.READY:
                return status.executor_id, status.handle, prep_id, sub
            if status.state in (
                PreparationState.FAILED,
                PreparationState.REJECTED,
                PreparationState.EXPIRED,
                PreparationState.RELEASED,
            ):
                connection.unsubscribe_preparation(prep_id)
                if status.error_code == PreparationErrorCode.PREPARATION_CAPACITY:
                    return None  # left queued for a later attempt
                await self._outcomes.fail_queued(
                    turn["id"],
                    "execution_unavailable",
                    f"The Runtime could not prepare the execution ({status.error_code}).",
                )
                return None

    async def _claim(
        self, turn_id: str, session: dict[str, Any], connection: Connection
    ) -> str | None:
        async def job(tx: Tx) -> str | None:
            row = await turns.get(tx, turn_id)
            if row is None or row["status"] != TurnStatus.QUEUED or row["cancel_requested_at"]:
                return None
            epoch = await tenancy.next_counter(tx, "worker_epoch")
            token = str(await tenancy.next_counter(tx, "fencing_token"))
            now = self._clock.now()
            moved = await turns.transition(
                tx,
                turn_id,
                (TurnStatus.QUEUED,),
                TurnStatus.IN_PROGRESS,
                fields={
                    "worker_epoch": epoch,
                    "fencing_token": token,
                    "device_id": connection.device_id,
                    "started_at": now,
                    "phase": "running",
                    "lease_expires_at": now + self._timers.lease_seconds,
                    "config_digest": session["request_hash"],
                },
            )
            if not moved:
                return None
            await tx.execute(
                "UPDATE turn_inputs SET state = 'initial' WHERE turn_id = ?"
                " AND kind = 'message' AND state = 'admitted'",
                (turn_id,),
            )
            await self._outcomes.recorder.emit_turn(tx, "agent.session.turn.in_progress", turn_id)
            return token

        return await self._db.write(job)

    async def _release(self, connection: Connection, prep_id: str, handle: str) -> None:
        with contextlib.suppress(SendFailed):
            await connection.send(
                "execution_release", prep_id, wire_exec.ExecutionRelease(handle=handle)
            )
        connection.unsubscribe_preparation(prep_id)

    async def _input(self, turn_id: str) -> list[Message]:
        rows = await self._db.read(
            partial(interactions.steering_inputs, turn_id=turn_id, state="initial")
        )
        return [message for row in rows for message in messages_of(row["payload"])]

    async def _start(
        self,
        connection: Connection,
        prep_id: str,
        sub: PreparationSubscription,
        executor_id: str,
        handle: str,
        run: RunProjection,
        messages: list[Message],
    ) -> bool:
        payload = wire_exec.ExecutionStart(
            executor_id=executor_id, handle=handle, run_id=run.turn_id, input=messages
        )
        try:
            await connection.send("execution_start", prep_id, payload)
            while True:
                status = await sub.next(self._timers.start_seconds)
                if status is None:
                    raise SendFailed(sub.error.reason if sub.error else "closed")
                if status.state is PreparationState.STARTED:
                    return True
                if status.state is PreparationState.STARTING:
                    continue
                await self._outcomes.fail_running(
                    run.turn_id,
                    run,
                    "execution_unavailable",
                    f"The Runtime did not start the execution ({status.error_code}).",
                )
                return False
        except (SendFailed, TimeoutError) as exc:
            await self._outcomes.fail_running(
                run.turn_id,
                run,
                "delivery_unknown",
                f"The start of the execution is unconfirmed ({exc or 'timeout'}).",
            )
            return False
        finally:
            connection.unsubscribe_preparation(prep_id)

    async def _send_cancel(
        self, connection: Connection, run: RunProjection
    ) -> asyncio.Future[InteractionDecisionAck]:
        delivery_id = f"cancel:{run.turn_id}"
        receipt = connection.expect_ack(delivery_id)
        try:
            await connection.send(
                "prompt_cancel", run.turn_id, wire_run.PromptCancel(delivery_id=delivery_id)
            )
        except SendFailed as exc:
            if not receipt.done():
                receipt.set_exception(ObservationError(str(exc)))
        return receipt

    async def _observe(
        self,
        run: RunProjection,
        sub: RunSubscription,
        cancel: asyncio.Event,
        connection: Connection,
    ) -> None:
        """Project the run's frames until `done` and settle the turn. The lease is renewed
        while the run is observed, frames or not. Once a cancellation is sent, its
        confirmation (a `done` and an applied receipt, or a receipt carrying the stopped
        turn's outcome) must arrive within the `cancel_unconfirmed` timer."""
        receipts: list[asyncio.Future[InteractionDecisionAck]] = []
        try:
            await self._observe_until_settled(run, sub, cancel, connection, receipts)
        finally:
            connection.forget_ack(f"cancel:{run.turn_id}")
            for receipt in receipts:
                if not receipt.done():
                    receipt.cancel()
                elif not receipt.cancelled():
                    receipt.exception()  # retrieved: a late or failed receipt is expected

    async def _observe_until_settled(
        self,
        run: RunProjection,
        sub: RunSubscription,
        cancel: asyncio.Event,
        connection: Connection,
        receipts: list[asyncio.Future[InteractionDecisionAck]],
    ) -> None:
        loop = asyncio.get_running_loop()
        receipt: asyncio.Future[InteractionDecisionAck] | None = None
        deadline: float | None = None
        done: wire_run.Done | None = None
        renewed = self._clock.now()
        while done is None:
            if cancel.is_set() and receipt is None:
                receipt = await self._send_cancel(connection, run)
                receipts.append(receipt)
                deadline = loop.time() + self._timers.cancel_unconfirmed_seconds
            if receipt is not None and (done := receipt_outcome(receipt, run)) is not None:
                break
            timeout = self._timers.lease_renew_seconds
            if deadline is not None:
                timeout = min(timeout, deadline - loop.time())
                if timeout <= 0:
                    break
            frame = await self._next(sub, None if receipt else cancel, receipt, timeout)
            if frame is None:
                reason = sub.error.reason if sub.error else "closed"
                await self._quiesce(run)
                await self._outcomes.fail_running(
                    run.turn_id,
                    run,
                    "event_stream_incomplete",
                    f"Observation of the execution stopped ({reason}); its effects are unknown.",
                )
                return
            batch: list[Frame] = [] if isinstance(frame, _Woken) else [frame, *sub.drain_nowait()]
            renew = self._clock.now() - renewed >= self._timers.lease_renew_seconds
            if renew:
                renewed = self._clock.now()
            if not batch and not renew:
                continue
            try:
                projected = await self._db.write(
                    partial(self._project, run=run, batch=batch, renew=renew)
                )
            except Fenced:
                log.warning("turn %s was fenced; its frames are ignored", run.turn_id)
                return
            except StorageUnavailable as exc:
                await self._storage_lost(run, connection, exc)
                return
            if isinstance(projected, ContractViolation):
                await self._violated(run, connection, projected, receipt is None)
                return
            done = projected
        await self._conclude(run, connection, done, receipt, deadline)

    async def _conclude(
        self,
        run: RunProjection,
        connection: Connection,
        done: wire_run.Done | None,
        receipt: asyncio.Future[InteractionDecisionAck] | None,
        deadline: float | None,
    ) -> None:
        """End an observed turn: without `done` (a cancellation never confirmed) it fails
        `cancel_unconfirmed`; with it, outputs are captured and the turn settles."""
        await self._quiesce(run)
        if done is None:
            await self._outcomes.fail_running(
                run.turn_id,
                run,
                "cancel_unconfirmed",
                "The cancellation was not confirmed in time; the turn's effects are unknown.",
            )
            return
        # Capture and settlement are bounded by their own timers; the lease is kept
        # while they run.
        keeper = asyncio.create_task(self._keep_lease(run), name=f"lease-{run.turn_id}")
        try:
            captured = await self._capture(run, connection)
            await self._settle(run, done, receipt, deadline, captured)
        finally:
            keeper.cancel()
            await asyncio.wait({keeper})  # re-raises only this task's own cancellation

    async def _keep_lease(self, run: RunProjection) -> None:
        with contextlib.suppress(Fenced):
            while True:
                await asyncio.sleep(self._timers.lease_renew_seconds)
                await self._db.write(partial(self._project, run=run, batch=[], renew=True))

    async def _violated(
        self,
        run: RunProjection,
        connection: Connection,
        violation: ContractViolation,
        cancel: bool,
    ) -> None:
        """The Runtime broke the contract: stop the Run there (best effort) and fail the
        turn now, its effects unknown."""
        log.warning("turn %s: contract violation: %s", run.turn_id, violation.reason)
        await self._quiesce(run)
        if cancel:
            with contextlib.suppress(SendFailed):
                await connection.send(
                    "prompt_cancel", run.turn_id, wire_run.PromptCancel(delivery_id="")
                )
        await self._outcomes.fail_running(
            run.turn_id,
            run,
            "contract_violation",
            f"The Runtime broke the protocol contract ({violation.reason}); "
            "the turn's effects are unknown.",
        )

    async def _quiesce(self, run: RunProjection) -> None:
        """Stop delivering input before the turn ends: its ending decides what becomes of
        input that was not delivered."""
        delivery = self._deliveries.get(run.turn_id)
        if delivery is not None:
            await delivery.stop()

    async def _next(
        self,
        sub: RunSubscription,
        cancel: asyncio.Event | None,
        receipt: asyncio.Future[InteractionDecisionAck] | None,
        timeout: float,
    ) -> Frame | _Woken | None:
        """The next frame, None when observation ended, or `_WOKEN` when a cancellation
        was requested, the receipt arrived or `timeout` passed first."""
        next_frame = asyncio.create_task(sub.next())
        waiters: set[asyncio.Future[Any]] = {next_frame}
        cancel_wait = asyncio.create_task(cancel.wait()) if cancel is not None else None
        if cancel_wait is not None:
            waiters.add(cancel_wait)
        if receipt is not None and not receipt.done():
            waiters.add(receipt)
        try:
            await asyncio.wait(waiters, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        finally:
            if cancel_wait is not None:
                cancel_wait.cancel()
            if not next_frame.done():
                next_frame.cancel()
                await asyncio.wait({next_frame})  # re-raises only this task's cancellation
        if next_frame.cancelled():
            return _WOKEN
        frame: Frame | None = next_frame.result()
        return frame

    async def _storage_lost(
        self, run: RunProjection, connection: Connection, exc: StorageUnavailable
    ) -> None:
        """Frames that could not be stored are lost: the execution is cancelled and the
        turn fails, settled as soon as storage takes writes again (not at lease expiry)."""
        log.error("turn %s: its frames could not be stored (%s)", run.turn_id, exc.reason)
        await self._quiesce(run)
        with contextlib.suppress(SendFailed):
            await self._send_cancel(connection, run)
        await self._outcomes.fail_running(
            run.turn_id,
            run,
            "storage_unavailable",
            "The turn's events could not be stored; its effects are unknown.",
        )

    async def _project(
        self, tx: Tx, run: RunProjection, batch: list[Frame], renew: bool
    ) -> wire_run.Done | ContractViolation | None:
        """Apply the batch in order up to `done`, or up to a frame that breaks the
        contract (returned; what came before it is kept)."""
        await self._projector.check_fence(tx, run)
        if renew:
            await tx.execute(
                "UPDATE turns SET lease_expires_at = ? WHERE id = ?",
                (self._clock.now() + self._timers.lease_seconds, run.turn_id),
            )
        for frame in batch:
            if frame.type == "done":
                payload: wire_run.Done = frame.payload
                return payload
            try:
                await self._projector.apply(tx, run, frame)
            except ContractViolation as violation:
                return violation
        return None

    async def _capture(self, run: RunProjection, connection: Connection) -> bool:
        """Capture artifacts from outputs/ at turn end; False when that failed."""
        if self._environments is None:
            return True
        try:
            await self._environments.capture(run.session_id, run.turn_id, connection)
        except (WorkspaceUnavailable, OSError, tarfile.TarError) as exc:
            log.warning("turn %s: artifact capture failed: %s", run.turn_id, exc)
            return False
        return True

    async def _settle(
        self,
        run: RunProjection,
        done: wire_run.Done,
        receipt: asyncio.Future[InteractionDecisionAck] | None,
        deadline: float | None,
        captured: bool = True,
    ) -> None:
        """Settle from `done`; after a cancellation the receipt decides the outcome, and
        it must arrive before the deadline set when the cancellation was sent."""
        cancelled = False
        unconfirmed = False
        if receipt is not None:
            remaining = 0.0
            if deadline is not None:
                remaining = max(0.0, deadline - asyncio.get_running_loop().time())
            try:
                ack = await asyncio.wait_for(asyncio.shield(receipt), remaining)
                ack.check(ack.delivery_id, CANCEL_ACK_CODES)
                cancelled = ack.applied
            except (TimeoutError, ObservationError, Exception):
                unconfirmed = True
        try:
            # Through a storage fault the settlement is retried until storage is back,
            # rather than left for the lease to expire.
            await self._db.write_durably(
                partial(
                    self._outcomes.settle,
                    run=run,
                    done=done,
                    cancelled=cancelled,
                    unconfirmed=unconfirmed,
                    captured=captured,
                )
            )
        except Fenced:
            log.warning("turn %s was fenced at settlement", run.turn_id)


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


def still_declared(connection: Connection, session: dict[str, Any]) -> bool:
    """Whether the connection's latest declaration still covers the session's needs."""
    declared = connection.available_kind(session["harness"])
    if connection.closed.is_set() or declared is None:
        return False
    return not missing_capabilities(declared.capabilities, required_capabilities(session))


def required_capabilities(session: dict[str, Any]) -> list[str]:
    """What a device must declare to run this session's turns (seed 000 admission table)."""
    required = list(ALWAYS_REQUIRED)
    environment = session["environment"]["type"]
    if environment == "none":
        required.append("environment_none")
    else:
        required.extend(
            ["local_environment", "workspace_read_preparation", "workspace_output_export"]
        )
    agent = session["agent"]
    if any(tool.get("type") == "function" for tool in agent.get("tools", [])):
        required.append("function_tools")
    servers = [
        tool
        for tool in agent.get("tools", [])
        if tool.get("type") == "mcp" and (tool.get("transport") or {}).get("type") == "http"
    ]
    if servers:
        required.append("mcp_http_tools")
    if any(tool.get("required") for tool in servers):
        required.append("mcp_http_required")
    if any(tool.get("credential_id") for tool in servers):
        required.append("mcp_http_bearer_auth")
    text_format = (agent.get("text") or {}).get("format") or {}
    if text_format.get("type") == "json_schema":
        required.extend(["structured_output", "message_items"])
    if (agent.get("multi_agent") or {}).get("enabled"):
        required.append("subagent_observations")
    else:
        required.append("subagent_control")
    return required


def local_environment(session: dict[str, Any]) -> wire_exec.LocalEnvironment | None:
    environment = session["environment"]
    if environment["type"] == "none":
        return None
    return wire_exec.LocalEnvironment(
        id=wire_uuid(session["environment_id"]),
        type=environment["type"],
        workspace_directory=environment.get("workspace_directory") or "",
    )


def configuration(
    session: dict[str, Any], connection: Connection, resolved: Resolved | None = None
) -> wire_exec.ExecutionConfiguration:
    """The `execution_prepare` configuration; `resolved` carries the secrets and corebox
    settings resolved for this execution (credentials.py)."""
    resolved = resolved or Resolved()
    agent = session["agent"]
    text = agent.get("text") or {}
    text_format = text.get("format") or {}
    output_format = None
    if text_format.get("type") == "json_schema":
        output_format = wire_exec.OutputFormat(
            type="json_schema", schema=text_format.get("schema") or {}
        )
    declared = connection.available_kind(session["harness"])
    observe = bool(declared and declared.capabilities.message_items)
    return wire_exec.ExecutionConfiguration(
        agent_kind=session["harness"],
        agent_options=wire_exec.AgentOptions(
            model=resolved.model or agent["model"],
            system_prompt=agent.get("instructions") or "",
            model_provider=resolved.model_provider,
            harness_config=resolved.harness_config,
        ),
        execution_controls=wire_exec.ExecutionControls(
            web_search="disabled",
            text_verbosity=text.get("verbosity") or "medium",
            disable_programmatic_tool_calling=True,
            output_format=output_format,
            reasoning_effort=(agent.get("reasoning") or {}).get("effort"),
        ),
        observe_messages=observe,
        disable_subagents=not (agent.get("multi_agent") or {}).get("enabled", False),
        disable_execution_environment=session["environment"]["type"] == "none",
        local_environment=local_environment(session),
        function_tools=[
            wire_exec.FunctionTool(
                name=t["name"], description=t.get("description", ""), parameters=t.get("parameters")
            )
            for t in agent.get("tools", [])
            if t.get("type") == "function"
        ],
        mcp_http_servers=resolved.mcp_http_servers,
    )
