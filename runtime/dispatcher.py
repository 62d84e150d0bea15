"""The Runtime's dispatcher: one handler per Core -> Runtime message type.

A handler is an async generator of its reply payloads and never sends: `_serve` sends
each reply, addressed to the request's envelope id and typed by its payload class,
before the handler goes on, and turns a `Refused` into the one `rejected` status. Each
frame is served on a task the dispatcher owns, so the receive loop keeps going.

Admission, start and release live in `Preparations`, the Executors in the
`ExecutorPool`, workspace operations in `WorkspaceOperations`; what is left here is the
table, the Run-scoped requests (cancel, steering, function results, decisions) and the
connection's end. Each connection gets a new Dispatcher; when its connection ends,
`close` cancels its Runs and closes its Executors and nothing is carried to the next
connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import time
from collections.abc import AsyncGenerator, Awaitable, Callable
from functools import partial
from typing import Any

import msgspec

from runtime.errors import Refused
from runtime.executors import ExecutorPool
from runtime.harness.registry import HarnessRegistry
from runtime.log_context import turn_fields
from runtime.operations import Offload, WorkspaceOperations
from runtime.preparations import Preparations
from runtime.proto import codec, limits
from runtime.proto.codec import Frame
from runtime.proto.device import DeviceShutdown
from runtime.proto.errors import CancelErrorCode, DecisionErrorCode, DecodeError, ValidationError
from runtime.proto.execution import PreparationState, PreparationStatus, undecodable_admission_reply
from runtime.proto.functions import FunctionResult
from runtime.proto.identities import validate_frame_id
from runtime.proto.interactions import (
    InteractionDecisionAck,
    PermissionDecision,
    PromptForUserChoiceDecision,
)
from runtime.proto.run import PromptCancel
from runtime.proto.steering import PromptSteer, PromptSteerAck
from runtime.runs import Run, Send
from runtime.suspension import Suspensions
from runtime.tasks import cancel_and_wait
from runtime.timers import Timers
from runtime.workspaces import Workspaces

log = logging.getLogger(__name__)

Replies = AsyncGenerator[msgspec.Struct, None]
Handler = Callable[[Frame], Replies]

# Receipts Core waits on are bounded by the receipt deadline (seed 000); every other
# reply by the transport's write deadline alone.
_RECEIPTS = (PreparationStatus, InteractionDecisionAck)


# Frames whose id is an interaction a Run opened.
_DECISIONS = frozenset({"permission_decision", "prompt_for_user_choice_decision"})


def _now_ms() -> int:
    return int(time.time() * 1000)


def _rejected(operation: str, refused: Refused) -> PreparationStatus:
    record = refused.record
    return PreparationStatus(
        revision=0,
        state=PreparationState.REJECTED,
        operation=operation,
        error_code=refused.code,
        handle=record.handle if record else "",
        executor_id=record.executor_id if record else "",
    )


def _not_applied(delivery_id: str, code: str) -> InteractionDecisionAck:
    return InteractionDecisionAck(delivery_id=delivery_id, applied=False, error_code=code)


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
        self._send = send
        self._tasks: set[asyncio.Task[None]] = set()
        self._expiries: dict[str, asyncio.TimerHandle] = {}  # transfer id -> expiry
        workspaces = workspaces or Workspaces(None)
        self._suspensions = suspensions or Suspensions()
        self._pool = ExecutorPool(self._timers, self._spawn)
        self._ops = WorkspaceOperations(
            workspaces,
            lambda handle, run_id: self._preparations.owned_binding(handle, run_id),
            self._suspensions.is_quiesced,
            timers=self._timers,
            offload=offload,
        )
        self._preparations = Preparations(
            harnesses,
            self._pool,
            workspaces,
            self._suspensions,
            self._ops.writing,
            send,
            now_ms,
            new_id,
        )
        self._handlers: dict[str, Handler] = {
            "execution_prepare": lambda f: self._preparations.prepare(f.id, f.payload),
            "execution_start": lambda f: self._preparations.start(f.id, f.payload),
            "execution_release": lambda f: self._preparations.release(f.id, f.payload),
            "prompt_cancel": self._cancel,
            "prompt_pause": self._pause,
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
        self._closing = asyncio.Lock()

    @property
    def shutting_down(self) -> bool:
        return self._preparations.shutting_down

    @property
    def _runs(self) -> dict[str, Run]:
        return self._preparations.runs

    @property
    def active_requests(self) -> int:
        return sum(1 for run in self._runs.values() if not run.done_sent)

    async def handle(self, frame: Frame) -> None:
        """Route one decoded frame; it is served on an owned task so the receive loop
        keeps going."""
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
        self._spawn(partial(self._serve, frame, handler))

    def _turn_of(self, frame: Frame) -> tuple[str, str] | None:
        """(session id, turn id or "") a frame works for, to name in its log lines; None
        for a frame that belongs to no session."""
        if frame.type == "execution_prepare":
            return frame.payload.session_id, ""
        if frame.type == "execution_start":
            return self._preparations.session_of(frame.id), frame.payload.run_id
        run = self._runs.get(frame.id)
        if run is None and frame.type in _DECISIONS:
            run = next((r for r in self._runs.values() if r.owns_interaction(frame.id)), None)
        return (run.session_id, run.run_id) if run is not None else None

    async def _serve(self, frame: Frame, handler: Handler) -> None:
        """Serve one frame in the log context of the turn it belongs to."""
        turn = self._turn_of(frame)
        with turn_fields(*turn) if turn else contextlib.nullcontext():
            await self._served(frame, handler)

    async def _served(self, frame: Frame, handler: Handler) -> None:
        """The one place replies are sent: each reply in order, then a refusal's
        `rejected` status."""
        try:
            async with contextlib.aclosing(handler(frame)) as replies:
                async for reply in replies:
                    await self._reply(frame.id, reply)
        except Refused as exc:
            log.warning("%s %s refused: %s", frame.type, frame.id, exc.code)
            await self._reply(frame.id, _rejected(frame.type, exc))

    async def _reply(self, id_: str, payload: msgspec.Struct) -> None:
        type_ = codec.type_of(payload)
        deadline = (
            limits.RECEIPT_SEND_TIMEOUT_SECONDS
            if isinstance(payload, _RECEIPTS)
            else limits.WRITE_DEADLINE_SECONDS
        )
        try:
            async with asyncio.timeout(deadline):
                await self._send(type_, id_, payload)
        except Exception:
            log.warning("%s for %s could not be sent", type_, id_)

    def _spawn(self, work: Callable[[], Awaitable[None]]) -> None:
        """Run `work()` in a task of its own. The coroutine is made when the task starts:
        a task cancelled before it started (at close) leaves none never awaited."""

        async def guarded() -> None:
            try:
                await work()
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
        self._spawn(partial(self._reply, error.frame_id, status))

    async def _device_shutdown(self, frame: Frame) -> Replies:
        """Core asks this Runtime to stop: admit nothing new, then let the transport
        close the connection, which settles Runs and closes Executors (`close`)."""
        request: DeviceShutdown = frame.payload
        self._preparations.shutting_down = True
        self._on_shutdown(request.reason)
        return  # no reply: the close of the connection answers
        yield

    # Run-scoped requests
    async def _cancel(self, frame: Frame) -> Replies:
        """Cancel a Run: no receipt before native settlement; `done` (synthesized when the
        adapter produced none) precedes the receipt. A Run whose adapter could not confirm
        that it stopped is refused `cancel_failed`, never applied."""
        request: PromptCancel = frame.payload
        run = self._runs.get(frame.id)
        delivery = request.delivery_id
        if run is None:
            if delivery:
                yield _not_applied(delivery, CancelErrorCode.RUN_INACTIVE)
            return
        settled = await run.cancel(limits.SETTLEMENT_TIMEOUT_SECONDS)
        if not delivery:
            return
        if not settled:
            failed = CancelErrorCode.CANCEL_FAILED if run.cancel_unconfirmed else None
            yield _not_applied(delivery, failed or CancelErrorCode.CANCEL_TIMEOUT)
            return
        yield InteractionDecisionAck(delivery_id=delivery, applied=True)

    async def _pause(self, frame: Frame) -> Replies:
        """Ask a Run to stop at its next checkpoint; its frames (a checkpoint, then a
        `done` that says `paused`) are the answer."""
        run = self._runs.get(frame.id)
        if run is not None:
            run.request_pause()
        return
        yield

    async def _steer(self, frame: Frame) -> Replies:
        """Refuse an invalid or late steering input; a Run acknowledges its own."""
        request: PromptSteer = frame.payload
        run = self._runs.get(frame.id)
        try:
            request.validate()
        except ValidationError as exc:
            yield PromptSteerAck(input_id=request.input_id, accepted=False, error_code=exc.code)
            return
        if run is None:
            yield PromptSteerAck(
                input_id=request.input_id, accepted=False, error_code="run_inactive"
            )
            return
        await run.steer(request)

    async def _function_result(self, frame: Frame) -> Replies:
        result: FunctionResult = frame.payload
        try:
            result.validate()
        except ValidationError as exc:
            yield _not_applied(result.delivery_id, exc.code)
            return
        run = self._runs.get(frame.id)
        if run is None:
            yield _not_applied(result.delivery_id, DecisionErrorCode.NOT_PENDING)
            return
        ack, apply = run.function_result(result)
        yield ack
        apply()

    async def _decision(self, frame: Frame) -> Replies:
        decision: PermissionDecision | PromptForUserChoiceDecision = frame.payload
        try:
            decision.validate()
        except ValidationError as exc:
            yield _not_applied(decision.delivery_id, exc.code)
            return
        owner = next((r for r in self._runs.values() if r.owns_interaction(frame.id)), None)
        if owner is None:
            yield _not_applied(decision.delivery_id, DecisionErrorCode.NOT_PENDING)
            return
        yield owner.decision(frame.id, decision)

    # Workspace operations and Environments
    async def _workspace_read(self, frame: Frame) -> Replies:
        yield await self._ops.read(frame.payload)

    async def _workspace_write(self, frame: Frame) -> Replies:
        result = self._ops.write(frame.id, frame.payload)
        self._arm_expiry(frame.id)
        if result is not None:
            yield result

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
                self._spawn(partial(self._reply, transfer_id, expired))

        self._expiries[transfer_id] = asyncio.get_running_loop().call_later(
            self._timers.transfer_body_wait, fire
        )

    async def _workspace_export(self, frame: Frame) -> Replies:
        was_open = self._ops.export_open(frame.id)
        result = self._ops.export(frame.id, frame.payload)
        if not was_open and self._ops.export_open(frame.id):
            # The deadline runs from the begin and is never extended by later pulls.
            self._expiries[frame.id] = asyncio.get_running_loop().call_later(
                self._timers.export_deadline, self._expire_export, frame.id
            )
        yield result

    def _expire_export(self, operation_id: str) -> None:
        self._expiries.pop(operation_id, None)
        self._ops.expire_export(operation_id)

    async def _runtime_prepare(self, frame: Frame) -> Replies:
        result = await self._ops.prepare(frame.id, frame.payload)
        self._arm_expiry(frame.id)
        if result is not None:
            yield result

    def _environment_busy(self, environment_id: str) -> bool:
        return self._preparations.environment_busy(environment_id) or self._ops.busy(environment_id)

    async def _quiesce(self, frame: Frame) -> Replies:
        reply = self._suspensions.quiesce(frame.payload, self._environment_busy)
        if reply.accepted:
            self._pool.close_environment(reply.environment_id)
        yield reply

    async def _resume(self, frame: Frame) -> Replies:
        yield self._suspensions.resume(frame.payload)

    async def close(self) -> bool:
        """The connection is gone: cancel Runs (no frame goes to the lost socket) and close
        Executors. Nothing is carried over to the next connection.

        Returns True once every Run settled and every Executor closed. An Executor whose
        close failed stays owned (and unusable) and the call may be retried; calls are
        serialized, so a retry never closes an Executor twice at once."""
        async with self._closing:
            for expiry in self._expiries.values():
                expiry.cancel()
            self._expiries.clear()
            self._pool.stop_timers()
            settled = True
            for run in list(self._runs.values()):
                run.done_sent = True  # the socket is lost: nothing more is sent for it
                settled = await run.cancel(limits.SETTLEMENT_TIMEOUT_SECONDS) and settled
            await cancel_and_wait(*self._tasks)
            return await self._pool.close_all() and settled

    def describe(self) -> dict[str, Any]:
        return {"runs": len(self._runs), "executors": len(self._pool)}
