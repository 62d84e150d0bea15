"""The Runtime's dispatcher: one handler per Core -> Runtime message type.

Handlers never touch a socket: they call `send`, which the transport implements.
Preparation and start run as tasks outside the receive loop. Each connection gets a new
Dispatcher; when its connection ends, `close` cancels its Runs and closes its Executors
and nothing is carried to the next connection.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import time
from collections.abc import Awaitable, Callable
from typing import Any

import msgspec

from runtime.admission import AdmissionRecord, AdmissionTable, fingerprint
from runtime.harness.base import Executor, HarnessAdapter
from runtime.harness.registry import HarnessRegistry
from runtime.operations import Offload, WorkspaceOperations
from runtime.proto import limits
from runtime.proto.capabilities import AgentKindCapabilities
from runtime.proto.codec import Frame
from runtime.proto.device import DeviceShutdown
from runtime.proto.errors import (
    CancelErrorCode,
    DecisionErrorCode,
    DecodeError,
    PreparationErrorCode,
    ValidationError,
)
from runtime.proto.execution import (
    ExecutionPrepare,
    ExecutionRelease,
    ExecutionStart,
    PreparationState,
    PreparationStatus,
    undecodable_admission_reply,
)
from runtime.proto.functions import FunctionResult
from runtime.proto.identities import validate_frame_id
from runtime.proto.interactions import (
    InteractionDecisionAck,
    PermissionDecision,
    PromptForUserChoiceDecision,
)
from runtime.proto.run import PromptCancel
from runtime.proto.steering import PromptSteer, PromptSteerAck
from runtime.runs import Run
from runtime.suspension import Suspensions
from runtime.tasks import cancel_and_wait
from runtime.timers import Timers
from runtime.workspaces import Binding, WorkspaceError, Workspaces

log = logging.getLogger(__name__)

Send = Callable[[str, str, msgspec.Struct], Awaitable[None]]


class Refused(Exception):
    """A request the Runtime does not accept; one place per handler turns it into the
    `rejected` reply. `echo` is False when the reply must not name the admission."""

    def __init__(self, code: str, echo: bool = True) -> None:
        super().__init__(code)
        self.code = code
        self.echo = echo


def _now_ms() -> int:
    return int(time.time() * 1000)


class Dispatcher:
    def __init__(
        self,
        harnesses: HarnessRegistry,
        send: Send,
        now_ms: Callable[[], int] = _now_ms,
        new_id: Callable[[], str] = lambda: secrets.token_hex(16),
        workspaces: Workspaces | None = None,
        suspensions: Suspensions | None = None,
        timers: Timers | None = None,
        on_shutdown: Callable[[str], None] = lambda _reason: None,
        offload: Offload = asyncio.to_thread,
    ) -> None:
        self._timers = timers or Timers()
        self._on_shutdown = on_shutdown
        self.shutting_down = False
        self._expiries: dict[str, asyncio.TimerHandle] = {}  # transfer id -> expiry
        self._idle_expiries: dict[str, asyncio.TimerHandle] = {}  # executor id -> expiry
        self._harnesses = harnesses
        self._workspaces = workspaces or Workspaces(None)
        self._suspensions = suspensions or Suspensions()
        self._ops = WorkspaceOperations(
            self._workspaces,
            self._binding_of_owner,
            self._suspensions.is_quiesced,
            timers=self._timers,
            offload=offload,
        )
        self._bindings: dict[str, Binding] = {}  # handle or run id -> bound workspace
        self._send = send
        self._now_ms = now_ms
        self._new_id = new_id
        self._admissions = AdmissionTable()
        self._executors: dict[str, Executor] = {}
        self._idle: dict[tuple[str, str], str] = {}  # (session, config) -> executor id
        self._runs: dict[str, Run] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._handlers: dict[str, Callable[[Frame], Awaitable[None]]] = {
            "execution_prepare": self._prepare,
            "execution_start": self._start,
            "execution_release": self._release,
            "prompt_cancel": self._cancel,
            "prompt_steer": self._steer,
            "function_result": self._function_result,
            "permission_decision": self._decision,
            "prompt_for_user_choice_decision": self._decision,
            "workspace_read": self._workspace_read,
            "workspace_write": self._workspace_write,
            "workspace_export": self._workspace_export,
            "runtime_prepare": self._runtime_prepare,
            "environment_quiesce": self._quiesce,
            "environment_resume": self._resume,
            "device_shutdown": self._device_shutdown,
        }
        self._executor_environments: dict[str, str] = {}  # executor id -> environment id
        self._declarations: dict[str, AgentKindCapabilities] = {}  # executor id -> frozen
        self._closing = asyncio.Lock()

    @property
    def active_requests(self) -> int:
        return sum(1 for run in self._runs.values() if not run.done_sent)

    async def handle(self, frame: Frame) -> None:
        """Route one decoded frame; slow work is spawned so the receive loop keeps going."""
        handler = self._handlers.get(frame.type)
        if handler is None:
            log.warning("no handler for %s", frame.type)
            return
        try:
            validate_frame_id(frame.type, frame.id)
        except ValidationError as exc:
            # No reply: a reply would echo an id that breaks its kind's rule (seed 000).
            log.warning("%s with an invalid id skipped: %s", frame.type, exc.code)
            return
        self._spawn(handler(frame))

    def _spawn(self, work: Awaitable[None]) -> None:
        async def guarded() -> None:
            try:
                await work
            except Exception:
                log.exception("dispatcher task failed")

        task = asyncio.create_task(guarded())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def refuse(self, error: DecodeError) -> None:
        """Answer a request whose envelope identifies it but whose payload did not decode.

        An admission request gets its `rejected` status (never silence, which would leave
        Core waiting); anything else, or an id that breaks its kind's rule, is skipped."""
        try:
            status = undecodable_admission_reply(error.frame_type, error.frame_id, error.field)
        except ValidationError:
            return
        log.warning(
            "%s %s refused: %s at %s",
            error.frame_type,
            error.frame_id,
            status.error_code,
            error.field,
        )
        self._spawn(self._status(error.frame_id, status))

    async def _status(self, request_id: str, status: PreparationStatus) -> None:
        try:
            await asyncio.wait_for(
                self._send("preparation_status", request_id, status),
                limits.RECEIPT_SEND_TIMEOUT_SECONDS,
            )
        except Exception:
            log.warning("preparation status for %s could not be sent", request_id)

    async def _reject(
        self, request_id: str, operation: str, code: str, record: AdmissionRecord | None = None
    ) -> None:
        await self._status(
            request_id,
            PreparationStatus(
                revision=0,
                state=PreparationState.REJECTED,
                operation=operation,
                error_code=code,
                handle=record.handle if record else "",
                executor_id=record.executor_id if record else "",
            ),
        )

    async def _device_shutdown(self, frame: Frame) -> None:
        """Core asks this Runtime to stop: admit nothing new, then let the transport
        close the connection, which settles Runs and closes Executors (`close`)."""
        request: DeviceShutdown = frame.payload
        self.shutting_down = True
        self._on_shutdown(request.reason)

    async def _prepare(self, frame: Frame) -> None:
        request: ExecutionPrepare = frame.payload
        existing = self._admissions.get(frame.id)
        if existing is not None:
            if existing.prepare_fingerprint == fingerprint(request):
                await self._status(frame.id, existing.status())
            else:
                await self._reject(
                    frame.id, "execution_prepare", PreparationErrorCode.REQUEST_CONFLICT
                )
            return
        try:
            adapter, binding = self._check_prepare(request)
            if request.configuration.workspace_read_only:
                await self._prepare_read_only(frame, request, binding)
                return
            record = await self._admit(frame.id, request)
        except Refused as exc:
            await self._reject(frame.id, "execution_prepare", exc.code)
            return
        await self._prepare_executor(frame.id, record, adapter)

    def _check_prepare(self, request: ExecutionPrepare) -> tuple[HarnessAdapter, Binding | None]:
        """The preparation's adapter and Environment binding; raises Refused."""
        if self.shutting_down:
            raise Refused(PreparationErrorCode.RESOURCE_UNAVAILABLE)
        try:
            request.validate()
        except ValidationError as exc:
            raise Refused(exc.code) from exc
        cfg = request.configuration
        adapter = self._harnesses.get(cfg.agent_kind)
        if adapter is None or not adapter.available():
            raise Refused(PreparationErrorCode.UNSUPPORTED_PREPARATION)
        local = cfg.local_environment
        if local is None:
            return adapter, None
        if not adapter.declaration.local_environment:
            raise Refused(PreparationErrorCode.UNSUPPORTED_CONFIGURATION)
        if self._suspensions.is_quiesced(local.id):
            raise Refused(PreparationErrorCode.RESOURCE_UNAVAILABLE)
        try:
            binding = self._workspaces.bind(local.id, local.type, local.workspace_directory)
        except WorkspaceError as exc:
            raise Refused(exc.code) from exc
        return adapter, binding

    async def _admit(self, request_id: str, request: ExecutionPrepare) -> AdmissionRecord:
        """Reserve admission within the preparation and Executor capacities; raises
        Refused when there is no room."""
        cfg = request.configuration
        if self._admissions.active_preparations() >= limits.MAX_ACTIVE_PREPARATIONS:
            raise Refused(PreparationErrorCode.PREPARATION_CAPACITY)
        reusable = self._idle.get((request.session_id, fingerprint(cfg))) in self._executors
        if not reusable and not await self._executor_room():
            raise Refused(PreparationErrorCode.EXECUTOR_CAPACITY)
        record = AdmissionRecord(
            request_id=request_id,
            handle=self._new_id(),
            session_id=request.session_id,
            configuration=cfg,
            prepare_fingerprint=fingerprint(request),
        )
        if not self._admissions.add(record, self._now_ms()):
            raise Refused(PreparationErrorCode.PREPARATION_CAPACITY)
        record.expires_at_ms = self._now_ms() + limits.ADMISSION_EXPIRY_SECONDS * 1000
        return record

    async def _prepare_executor(
        self, request_id: str, record: AdmissionRecord, adapter: HarnessAdapter
    ) -> None:
        """Reuse the Session's idle Executor (`ready` at once) or prepare a new one."""
        cfg = record.configuration
        key = (record.session_id, fingerprint(cfg))
        idle = self._idle.pop(key, None)
        if idle is not None and idle in self._executors:
            record.executor_id, record.reused = idle, True
            await self._status(request_id, record.advance(PreparationState.READY))
            return
        await self._status(request_id, record.advance(PreparationState.PREPARING))
        executor_id = self._new_id()
        try:
            executor = await adapter.create_executor(executor_id, cfg)
        except Exception:
            log.exception("native preparation failed")
            await self._status(
                request_id,
                record.advance(PreparationState.FAILED, PreparationErrorCode.PREPARATION_FAILED),
            )
            return
        self._executors[executor_id] = executor
        if record.state is not PreparationState.PREPARING:
            # Released while preparing: the Executor is kept idle, not leaked.
            self._went_idle(key, executor_id)
            return
        self._declarations[executor_id] = adapter.declaration
        if cfg.local_environment is not None:
            self._executor_environments[executor_id] = cfg.local_environment.id
        record.executor_id = executor_id
        await self._status(request_id, record.advance(PreparationState.READY))

    async def _prepare_read_only(
        self, frame: Frame, request: ExecutionPrepare, binding: Binding | None
    ) -> None:
        """The read-only profile: a handle bound to an Environment, no Harness, no input."""
        if binding is None or not request.configuration.local_environment:
            await self._reject(
                frame.id, "execution_prepare", PreparationErrorCode.UNSUPPORTED_READ_PREPARATION
            )
            return
        record = AdmissionRecord(
            request_id=frame.id,
            handle=self._new_id(),
            session_id=request.session_id,
            configuration=request.configuration,
            prepare_fingerprint=fingerprint(request),
            read_only=True,
        )
        if not self._admissions.add(record, self._now_ms()):
            await self._reject(
                frame.id, "execution_prepare", PreparationErrorCode.PREPARATION_CAPACITY
            )
            return
        record.expires_at_ms = self._now_ms() + limits.ADMISSION_EXPIRY_SECONDS * 1000
        self._bindings[record.handle] = binding
        await self._status(frame.id, record.advance(PreparationState.READY))

    def _binding_of_owner(self, handle: str, run_id: str) -> Binding | None:
        binding = self._owned_binding(handle, run_id)
        if binding is None or self._suspensions.is_quiesced(binding.environment_id):
            return None
        return binding

    def _owned_binding(self, handle: str, run_id: str) -> Binding | None:
        if handle:
            record = self._admissions.by_handle(handle)
            if record is None or record.state is not PreparationState.READY:
                return None
            if record.expired(self._now_ms()):
                return None
            return self._bindings.get(handle)
        run = self._runs.get(run_id)
        return None if run is None else self._bindings.get(run_id)

    async def _start(self, frame: Frame) -> None:
        request: ExecutionStart = frame.payload
        record = self._admissions.get(frame.id)
        if record is not None and record.state in (
            PreparationState.STARTING,
            PreparationState.STARTED,
        ):
            if record.start_fingerprint == fingerprint(request):
                await self._status(frame.id, record.status())
            else:
                await self._reject(
                    frame.id, "execution_start", PreparationErrorCode.START_CONFLICT, record
                )
            return
        try:
            record = self._check_start(frame.id, request, record)
        except Refused as exc:
            echoed = record if exc.echo else None
            await self._reject(frame.id, "execution_start", exc.code, echoed)
            return
        if record.expired(self._now_ms()):
            await self._status(frame.id, record.advance(PreparationState.EXPIRED))
            self._return_idle(record)
            return
        try:
            self._check_runnable(request, record)
        except Refused as exc:
            await self._reject(frame.id, "execution_start", exc.code, record)
            return
        executor = self._executors.get(record.executor_id)
        if executor is None:
            await self._status(
                frame.id,
                record.advance(PreparationState.FAILED, PreparationErrorCode.EXECUTOR_UNAVAILABLE),
            )
            return
        await self._launch(frame.id, request, record, executor)

    def _check_start(
        self, request_id: str, request: ExecutionStart, record: AdmissionRecord | None
    ) -> AdmissionRecord:
        """The ready admission this start names; raises Refused (with `echo` False when
        the rejection must not name the handle)."""
        if self.shutting_down:
            raise Refused(PreparationErrorCode.RESOURCE_UNAVAILABLE)
        if record is None:
            raise Refused(PreparationErrorCode.UNKNOWN_PREPARATION)
        try:
            request.validate()
        except ValidationError as exc:
            log.warning("execution_start %s refused: %s", request_id, exc.code)
            raise Refused(exc.code) from exc
        if record.read_only:
            raise Refused(PreparationErrorCode.READ_ONLY_PREPARATION)
        if request.handle != record.handle:
            log.warning("execution_start %s names another handle", request_id)
            raise Refused(PreparationErrorCode.INVALID_START, echo=False)
        if request.executor_id != record.executor_id:
            raise Refused(PreparationErrorCode.UNKNOWN_EXECUTOR)
        if record.state is not PreparationState.READY:
            raise Refused(PreparationErrorCode.PREPARATION_NOT_READY)
        return record

    def _check_runnable(self, request: ExecutionStart, record: AdmissionRecord) -> None:
        """Raises Refused when the Run cannot start now."""
        if request.run_id in self._runs:
            raise Refused(PreparationErrorCode.RUN_CONFLICT)
        local = record.configuration.local_environment
        if local is not None and self._ops.writing(local.id):
            # Execution is excluded while a write is received or applied (seed 000); the
            # handle stays ready, so Core may start it once the write settled.
            raise Refused(PreparationErrorCode.RESOURCE_UNAVAILABLE)

    async def _launch(
        self, request_id: str, request: ExecutionStart, record: AdmissionRecord, executor: Executor
    ) -> None:
        """Transfer the admission to the Run (`starting`, `started`) and start it."""
        record.run_id = request.run_id
        record.start_fingerprint = fingerprint(request)
        await self._status(request_id, record.advance(PreparationState.STARTING))
        workspace = self._workspace_of(record)
        run = Run(
            request.run_id,
            executor,
            self._declarations[record.executor_id],
            self._send,
            workspace=workspace.root if workspace else None,
            sandbox=self._workspaces.sandbox,
        )
        if workspace is not None:
            self._bindings[request.run_id] = workspace
        self._runs[request.run_id] = run
        await self._status(request_id, record.advance(PreparationState.STARTED))
        run.start(request.input)
        assert run.task is not None
        run.task.add_done_callback(lambda _t: self._run_finished(record, run))

    def _workspace_of(self, record: AdmissionRecord) -> Binding | None:
        local = record.configuration.local_environment
        return None if local is None else self._workspaces.get(local.id)

    def _run_finished(self, record: AdmissionRecord, run: Run) -> None:
        self._runs.pop(run.run_id, None)
        self._bindings.pop(run.run_id, None)
        self._return_idle(record)

    def _return_idle(self, record: AdmissionRecord) -> None:
        if record.executor_id in self._executors:
            key = (record.session_id, fingerprint(record.configuration))
            previous = self._idle.get(key)
            if previous is not None and previous != record.executor_id:
                self._close_executor(previous)
            self._went_idle(key, record.executor_id)
            if len(self._idle) > limits.MAX_IDLE_EXECUTORS:
                oldest = next(iter(self._idle))
                self._close_executor(self._idle.pop(oldest))

    def _went_idle(self, key: tuple[str, str], executor_id: str) -> None:
        """Keep the Executor for reuse by its Session; close it once it stayed idle for
        the Executor idle timer (reuse in between makes it busy, and the next idle
        period re-arms the timer)."""
        self._idle[key] = executor_id
        previous = self._idle_expiries.pop(executor_id, None)
        if previous is not None:
            previous.cancel()

        def fire() -> None:
            self._idle_expiries.pop(executor_id, None)
            if self._idle.get(key) == executor_id:
                del self._idle[key]
                log.info("executor %s idle past its timer; closing", executor_id)
                self._close_executor(executor_id)

        self._idle_expiries[executor_id] = asyncio.get_running_loop().call_later(
            self._timers.executor_idle, fire
        )

    async def _executor_room(self) -> bool:
        """Whether one more Executor fits under MAX_EXECUTORS, closing the oldest idle
        ones to make room. Executors being prepared, running, idle, or whose close
        failed all count: an Executor leaves the count only once its close succeeded."""
        while len(self._executors) + self._admissions.active_preparations() >= limits.MAX_EXECUTORS:
            if not self._idle:
                return False
            executor_id = self._idle.pop(next(iter(self._idle)))
            executor = self._executors.get(executor_id)
            if executor is None:
                continue
            try:
                await executor.close()
            except Exception:
                log.warning("executor %s cleanup unconfirmed; it stays owned", executor_id)
                return False
            self._forget_executor(executor_id)
        return True

    def _forget_executor(self, executor_id: str) -> None:
        self._executors.pop(executor_id, None)
        self._declarations.pop(executor_id, None)
        self._executor_environments.pop(executor_id, None)

    def _close_executor(self, executor_id: str) -> None:
        """Close an idle Executor; it stays owned (never reused) until the close succeeds."""
        executor = self._executors.get(executor_id)
        if executor is None:
            return

        async def closing() -> None:
            await executor.close()
            self._forget_executor(executor_id)

        self._spawn(closing())

    async def _release(self, frame: Frame) -> None:
        request: ExecutionRelease = frame.payload
        record = self._admissions.get(frame.id)
        if record is None or record.handle != request.handle:
            await self._reject(frame.id, "execution_release", PreparationErrorCode.INVALID_RELEASE)
            return
        if record.state not in (PreparationState.PREPARING, PreparationState.READY):
            await self._reject(
                frame.id, "execution_release", PreparationErrorCode.INVALID_RELEASE, record
            )
            return
        await self._status(frame.id, record.advance(PreparationState.RELEASED))
        self._bindings.pop(record.handle, None)
        if not record.read_only:
            self._return_idle(record)

    async def _ack(self, id_: str, ack: InteractionDecisionAck) -> None:
        try:
            await asyncio.wait_for(
                self._send("interaction_decision_ack", id_, ack),
                limits.RECEIPT_SEND_TIMEOUT_SECONDS,
            )
        except Exception:
            log.warning("decision receipt for %s could not be sent", id_)

    async def _cancel(self, frame: Frame) -> None:
        """Cancel a Run: no receipt before native settlement; `done` (synthesized when the
        adapter produced none) precedes the receipt."""
        request: PromptCancel = frame.payload
        run = self._runs.get(frame.id)
        delivery = request.delivery_id
        if run is None:
            if delivery:
                await self._ack(
                    frame.id,
                    InteractionDecisionAck(
                        delivery_id=delivery, applied=False, error_code=CancelErrorCode.RUN_INACTIVE
                    ),
                )
            return
        settled = await run.cancel(limits.SETTLEMENT_TIMEOUT_SECONDS)
        if not delivery:
            return
        if not settled:
            await self._ack(
                frame.id,
                InteractionDecisionAck(
                    delivery_id=delivery, applied=False, error_code=CancelErrorCode.CANCEL_TIMEOUT
                ),
            )
            return
        await self._ack(frame.id, InteractionDecisionAck(delivery_id=delivery, applied=True))

    async def _steer(self, frame: Frame) -> None:
        request: PromptSteer = frame.payload
        run = self._runs.get(frame.id)
        try:
            request.validate()
        except ValidationError as exc:
            await self._send(
                "prompt_steer_ack",
                frame.id,
                PromptSteerAck(input_id=request.input_id, accepted=False, error_code=exc.code),
            )
            return
        if run is None:
            await self._send(
                "prompt_steer_ack",
                frame.id,
                PromptSteerAck(
                    input_id=request.input_id, accepted=False, error_code="run_inactive"
                ),
            )
            return
        await run.steer(request)

    async def _function_result(self, frame: Frame) -> None:
        result: FunctionResult = frame.payload
        try:
            result.validate()
        except ValidationError as exc:
            await self._ack(
                frame.id,
                InteractionDecisionAck(
                    delivery_id=result.delivery_id, applied=False, error_code=exc.code
                ),
            )
            return
        run = self._runs.get(frame.id)
        if run is None:
            await self._ack(
                frame.id,
                InteractionDecisionAck(
                    delivery_id=result.delivery_id,
                    applied=False,
                    error_code=DecisionErrorCode.NOT_PENDING,
                ),
            )
            return
        ack, apply = run.function_result(result)
        await self._ack(frame.id, ack)
        apply()

    async def _decision(self, frame: Frame) -> None:
        decision: PermissionDecision | PromptForUserChoiceDecision = frame.payload
        try:
            decision.validate()
        except ValidationError as exc:
            await self._ack(
                frame.id,
                InteractionDecisionAck(
                    delivery_id=decision.delivery_id, applied=False, error_code=exc.code
                ),
            )
            return
        owner = next((r for r in self._runs.values() if r.owns_interaction(frame.id)), None)
        if owner is None:
            await self._ack(
                frame.id,
                InteractionDecisionAck(
                    delivery_id=decision.delivery_id,
                    applied=False,
                    error_code=DecisionErrorCode.NOT_PENDING,
                ),
            )
            return
        await self._ack(frame.id, owner.decision(frame.id, decision))

    async def _workspace_read(self, frame: Frame) -> None:
        await self._send("workspace_read_result", frame.id, await self._ops.read(frame.payload))

    async def _workspace_write(self, frame: Frame) -> None:
        result = self._ops.write(frame.id, frame.payload)
        self._arm_expiry(frame.id)
        if result is not None:
            await self._send("workspace_write_result", frame.id, result)

    def _arm_expiry(self, transfer_id: str) -> None:
        """(Re)arm the open transfer's body wait; a step that ended it disarms it."""
        previous = self._expiries.pop(transfer_id, None)
        if previous is not None:
            previous.cancel()
        steps = self._ops.transfer_steps(transfer_id)
        if steps is None:
            return

        def fire() -> None:
            self._expiries.pop(transfer_id, None)
            expired = self._ops.expire(transfer_id, steps)
            if expired is not None:
                self._spawn(self._send(expired[0], transfer_id, expired[1]))

        self._expiries[transfer_id] = asyncio.get_running_loop().call_later(
            self._timers.transfer_body_wait, fire
        )

    async def _workspace_export(self, frame: Frame) -> None:
        was_open = self._ops.export_open(frame.id)
        result = self._ops.export(frame.id, frame.payload)
        if not was_open and self._ops.export_open(frame.id):
            # The deadline runs from the begin and is never extended by later pulls.
            self._expiries[frame.id] = asyncio.get_running_loop().call_later(
                self._timers.export_deadline, self._expire_export, frame.id
            )
        await self._send("workspace_export_result", frame.id, result)

    def _expire_export(self, operation_id: str) -> None:
        self._expiries.pop(operation_id, None)
        self._ops.expire_export(operation_id)

    async def _runtime_prepare(self, frame: Frame) -> None:
        result = await self._ops.prepare(frame.id, frame.payload)
        self._arm_expiry(frame.id)
        if result is not None:
            await self._send("runtime_prepare_result", frame.id, result)

    def _environment_busy(self, environment_id: str) -> bool:
        return any(b.environment_id == environment_id for b in self._bindings.values()) or (
            self._ops.busy(environment_id)
        )

    async def _quiesce(self, frame: Frame) -> None:
        reply = self._suspensions.quiesce(frame.payload, self._environment_busy)
        if reply.accepted:
            for executor_id, environment_id in list(self._executor_environments.items()):
                if environment_id == reply.environment_id:
                    for key, idle in list(self._idle.items()):
                        if idle == executor_id:
                            del self._idle[key]
                    self._close_executor(executor_id)
        await self._send("environment_quiesced", frame.id, reply)

    async def _resume(self, frame: Frame) -> None:
        await self._send("environment_resumed", frame.id, self._suspensions.resume(frame.payload))

    async def close(self) -> bool:
        """The connection is gone: cancel Runs (no frame goes to the lost socket) and close
        Executors. Nothing is carried over to the next connection.

        Returns True once every Run settled and every Executor closed. An Executor whose
        close failed stays owned (and unusable) and the call may be retried; calls are
        serialized, so a retry never closes an Executor twice at once."""
        async with self._closing:
            for expiry in (*self._expiries.values(), *self._idle_expiries.values()):
                expiry.cancel()
            self._expiries.clear()
            self._idle_expiries.clear()
            settled = True
            for run in list(self._runs.values()):
                run.done_sent = True  # the socket is lost: nothing more is sent for it
                settled = await run.cancel(limits.SETTLEMENT_TIMEOUT_SECONDS) and settled
            await cancel_and_wait(*self._tasks)
            self._idle.clear()
            for executor_id, executor in list(self._executors.items()):
                try:
                    await executor.close()
                except Exception:
                    log.warning("executor %s cleanup unconfirmed; it stays owned", executor_id)
                    settled = False
                    continue
                self._executors.pop(executor_id, None)
                self._declarations.pop(executor_id, None)
            return settled

    def describe(self) -> dict[str, Any]:
        return {"runs": len(self._runs), "executors": len(self._executors)}
