"""One Run on the Runtime side: the task that drives the adapter, the context it uses to
reach Core, and the rule that exactly one `done` ends it, sent only after the native
turn has settled and the receipts of inputs it was processing have been sent.

Receipts kept here:
- function results and decisions: a replay with the same content is acknowledged
  `applied` again; different content for the same call is `decision_conflict`;
- steering: `written` when the input reaches the adapter's queue, `accepted` when the
  adapter takes it; an input still unconsumed when the Run ends is refused
  `run_inactive` before `done`.

Checkpoints and pause: the adapter calls `checkpoint(boundary, cursor)` at a safe point
(nothing it started is in flight); a wait for a function result, approval or choice is
one when the adapter passes its cursor with the request. A pause is honoured only
there: at once when the Run's last frame was a checkpoint (the adapter is waiting or
between steps), otherwise at the adapter's next checkpoint. A paused Run ends with
`done` whose metadata says `paused`; `resume` (from `execution_start`) is the cursor the
adapter continues from, and `wait_*` re-register a request sent before the restart
without sending it again.

Optional operations (function calls, permission requests, function results, permission
decisions, steering) are checked against the declaration frozen at admission before
anything reaches the adapter or the wire; an undeclared one is Unsupported. How an
adapter failure becomes the Run's `error` frame is decided in one place (`_describe`):
a declared operation answering Unsupported is a contract violation, and only a
NativeFailure carries an engine failure code.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import msgspec

from runtime.confinement import NONE, Confinement, Sandbox
from runtime.errors import RuntimeFault
from runtime.harness.base import (
    ChoiceOutcome,
    ContractViolation,
    Executor,
    FunctionOutcome,
    HarnessError,
    NativeFailure,
    OutcomeUnknown,
    OutputTooLarge,
    Unavailable,
    Unsupported,
)
from runtime.log_context import turn_fields
from runtime.proto import limits
from runtime.proto import run as wire
from runtime.proto.capabilities import AgentKindCapabilities
from runtime.proto.errors import (
    DecisionErrorCode,
    FrameTooLarge,
    SteerErrorCode,
    classify_engine_failure,
)
from runtime.proto.functions import FunctionCall, FunctionResult
from runtime.proto.history import HistoryEntry
from runtime.proto.inputs import MessageInput
from runtime.proto.interactions import (
    ChoiceQuestion,
    InteractionDecisionAck,
    PermissionDecision,
    PermissionRequest,
    PromptForUserChoice,
    PromptForUserChoiceDecision,
)
from runtime.proto.steering import PromptSteer, PromptSteerAck

log = logging.getLogger(__name__)

Send = Callable[[str, str, msgspec.Struct], Awaitable[None]]
_encoder = msgspec.json.Encoder(order="sorted")


def _fingerprint(value: msgspec.Struct, exclude: str = "delivery_id") -> str:
    data = msgspec.to_builtins(value)
    data.pop(exclude, None)
    return hashlib.sha256(_encoder.encode(data)).hexdigest()


def _nothing() -> None:
    return None


class OutputClosed(RuntimeFault):
    """A frame was emitted after the Run's `done`."""


@dataclass
class _Pending:
    future: asyncio.Future[object]
    fingerprint: str = ""
    question_ids: tuple[str, ...] = ()


@dataclass
class _Steer:
    fingerprint: str
    messages: MessageInput
    ack: PromptSteerAck | None = None
    taken: bool = False


class Run:
    def __init__(
        self,
        run_id: str,
        executor: Executor,
        declaration: AgentKindCapabilities,
        send: Send,
        workspace: Path | None = None,
        sandbox: Sandbox | None = None,
        history: list[HistoryEntry] | None = None,
        snapshot: Callable[[], Awaitable[str]] | None = None,
        session_id: str = "",
    ) -> None:
        self.session_id = session_id
        self.workspace = workspace
        self.history = history
        self._snapshot = snapshot
        self.sandbox = sandbox or Sandbox(Confinement(NONE))
        self.run_id = run_id
        self.executor = executor
        self.declaration = declaration
        self._send = send
        self._usage: wire.Usage | None = None
        self.done_sent = False
        self.cancel_requested = False
        self.cancel_unconfirmed = False  # the adapter could not confirm it stopped
        self.pause_requested = False
        self.paused = False
        self.resume = ""
        self._at_checkpoint = False
        self.task: asyncio.Task[None] | None = None
        self._driving = False
        self.settled = asyncio.Event()
        self._calls: dict[str, _Pending] = {}
        self._applied: dict[str, str] = {}  # call or interaction id -> result fingerprint
        self._interactions: dict[str, _Pending] = {}
        self._metadata: dict[str, str] = {}  # for the `done` frame (`annotate`)
        self._denials: dict[str, str] = {}  # permission request id -> the denial's message
        self._steers: dict[str, _Steer] = {}
        self._written: list[str] = []
        self._steer_written = asyncio.Event()
        self._acks: set[asyncio.Task[None]] = set()

    # RunContext, used by the adapter.
    async def emit(self, type_: str, payload: msgspec.Struct) -> None:
        """Send one Run frame. Raises OutputTooLarge, sending nothing, for a frame larger
        than Core reads: the adapter's failure then ends this Run alone."""
        if self.done_sent:
            raise OutputClosed(self.run_id)
        if isinstance(payload, wire.Usage):
            self._usage = payload
        elif type_ != "checkpoint":
            self._at_checkpoint = False
        try:
            await self._send(type_, self.run_id, payload)
        except FrameTooLarge as exc:
            log.warning("run %s: %s frame not sent: %s", self.run_id, type_, exc)
            raise OutputTooLarge(str(exc)) from exc

    @property
    def resume_cursor(self) -> str:
        return self.resume

    async def checkpoint(self, boundary: wire.CheckpointBoundary, cursor: str) -> None:
        """Send a checkpoint; when a pause was requested, stop here (the Run ends paused)."""
        await self.emit("checkpoint", wire.Checkpoint(boundary=boundary, cursor=cursor))
        self._at_checkpoint = True
        if self.pause_requested:
            self.paused = True
            raise asyncio.CancelledError

    async def _wait(
        self, pending: _Pending, boundary: wire.CheckpointBoundary, cursor: str
    ) -> object:
        if cursor:
            await self.checkpoint(boundary, cursor)
        return await pending.future

    async def call_function(
        self, call_id: str, name: str, arguments: str, checkpoint: str = ""
    ) -> FunctionOutcome:
        pending = self._pending_call(call_id)
        await self.emit(
            "function_call",
            FunctionCall(call_id=call_id, name=name, arguments=msgspec.Raw(arguments.encode())),
        )
        result = await self._wait(pending, "awaiting_function_result", checkpoint)
        assert isinstance(result, FunctionOutcome)
        return result

    async def _resumed_wait(self, pending: _Pending) -> object:
        """Wait for the answer to what was asked before this Run resumed. Until the Run
        sends a frame it is still at the checkpoint it resumed from, where a pause
        (asked before this wait or during it) stops it, as at any checkpoint."""
        if self.pause_requested and self._at_checkpoint:
            self.paused = True
            raise asyncio.CancelledError
        return await pending.future

    async def wait_function(self, call_id: str) -> FunctionOutcome:
        result = await self._resumed_wait(self._pending_call(call_id))
        assert isinstance(result, FunctionOutcome)
        return result

    def _pending_call(self, call_id: str) -> _Pending:
        if not self.declaration.function_tools:
            raise Unsupported("function_tools", "function tools are not declared")
        pending = _Pending(asyncio.get_running_loop().create_future())
        self._calls[call_id] = pending
        return pending

    async def request_permission(
        self, request_id: str, tool: str, title: str, detail: str = "", checkpoint: str = ""
    ) -> bool:
        pending = self._pending_permission(request_id)
        await self.emit(
            "permission_request",
            PermissionRequest(request_id=request_id, tool=tool, title=title, detail=detail),
        )
        return bool(await self._wait(pending, "awaiting_approval", checkpoint))

    async def wait_permission(self, request_id: str) -> bool:
        return bool(await self._resumed_wait(self._pending_permission(request_id)))

    def _pending_permission(self, request_id: str) -> _Pending:
        if not self.declaration.permissions:
            raise Unsupported("permissions", "permissions are not declared")
        pending = _Pending(asyncio.get_running_loop().create_future())
        self._interactions[request_id] = pending
        return pending

    async def ask_choice(
        self, ask_id: str, questions: list[ChoiceQuestion], checkpoint: str = ""
    ) -> ChoiceOutcome:
        pending = self._pending_choice(ask_id, tuple(q.id for q in questions))
        await self.emit(
            "prompt_for_user_choice", PromptForUserChoice(ask_id=ask_id, questions=questions)
        )
        result = await self._wait(pending, "awaiting_choice", checkpoint)
        assert isinstance(result, ChoiceOutcome)
        return result

    async def wait_choice(self, ask_id: str, question_ids: tuple[str, ...]) -> ChoiceOutcome:
        result = await self._resumed_wait(self._pending_choice(ask_id, question_ids))
        assert isinstance(result, ChoiceOutcome)
        return result

    def _pending_choice(self, ask_id: str, question_ids: tuple[str, ...]) -> _Pending:
        pending = _Pending(asyncio.get_running_loop().create_future(), question_ids=question_ids)
        self._interactions[ask_id] = pending
        return pending

    def annotate(self, key: str, value: str) -> None:
        self._metadata[key] = value

    def denial(self, request_id: str) -> str:
        return self._denials.pop(request_id, "")

    def take_steered(self) -> list[MessageInput]:
        taken: list[MessageInput] = []
        for input_id in self._written:
            steer = self._steers[input_id]
            steer.taken = True
            taken.append(steer.messages)
            self._spawn_ack(input_id, PromptSteerAck(input_id=input_id, accepted=True))
        self._written = []
        self._steer_written.clear()
        return taken

    async def wait_steered(self) -> None:
        await self._steer_written.wait()

    # Deliveries from Core.
    def owns_interaction(self, interaction_id: str) -> bool:
        return interaction_id in self._interactions or interaction_id in self._applied

    def function_result(
        self, result: FunctionResult
    ) -> tuple[InteractionDecisionAck, Callable[[], None]]:
        """Check a delivered result; return its receipt and the step that hands it to the
        adapter. The caller sends the receipt first, so Core sees the receipt before
        anything the harness does with the result."""

        def refuse(code: str) -> tuple[InteractionDecisionAck, Callable[[], None]]:
            ack = InteractionDecisionAck(
                delivery_id=result.delivery_id, applied=not code, error_code=code
            )
            return ack, _nothing

        if not self.declaration.function_tools:
            return refuse(DecisionErrorCode.UNSUPPORTED)
        if result.has_images and not self.declaration.function_result_images:
            return refuse(DecisionErrorCode.UNSUPPORTED)
        fingerprint = _fingerprint(result)
        if result.call_id in self._applied:
            same = self._applied[result.call_id] == fingerprint
            return refuse("" if same else DecisionErrorCode.DECISION_CONFLICT)
        pending = self._calls.pop(result.call_id, None)
        if pending is None or pending.future.done():
            return refuse(DecisionErrorCode.NOT_PENDING)
        self._remember_applied(result.call_id, fingerprint)
        outcome = FunctionOutcome(result.success, list(result.content))

        def apply() -> None:
            if not pending.future.done():
                pending.future.set_result(outcome)

        return refuse("")[0], apply

    def _remember_applied(self, key: str, fingerprint: str) -> None:
        """Keep what was applied so a replay is answered the same; the oldest entries
        leave first past APPLIED_DECISION_CACHE_ENTRIES (a replay of one of those is
        then `not_pending`, never applied twice)."""
        while len(self._applied) >= limits.APPLIED_DECISION_CACHE_ENTRIES:
            del self._applied[next(iter(self._applied))]
        self._applied[key] = fingerprint

    def decision(
        self, interaction_id: str, decision: PermissionDecision | PromptForUserChoiceDecision
    ) -> InteractionDecisionAck:
        def ack(code: str = "") -> InteractionDecisionAck:
            return InteractionDecisionAck(
                delivery_id=decision.delivery_id, applied=not code, error_code=code
            )

        if isinstance(decision, PermissionDecision) and not self.declaration.permissions:
            return ack(DecisionErrorCode.UNSUPPORTED)
        fingerprint = _fingerprint(decision)
        if interaction_id in self._applied:
            same = self._applied[interaction_id] == fingerprint
            return ack("" if same else DecisionErrorCode.DECISION_CONFLICT)
        pending = self._interactions.get(interaction_id)
        if pending is None or pending.future.done():
            return ack(DecisionErrorCode.NOT_PENDING)
        if isinstance(decision, PermissionDecision):
            if pending.question_ids:
                return ack(DecisionErrorCode.INVALID_DECISION)
            value: object = decision.approved
            if not decision.approved and decision.message:
                self._denials[interaction_id] = decision.message
        else:
            try:
                answers = decision.answers_for(list(pending.question_ids))
            except Exception:
                return ack(DecisionErrorCode.INVALID_DECISION)
            value = ChoiceOutcome({} if decision.cancelled else answers, decision.cancelled)
        del self._interactions[interaction_id]
        pending.future.set_result(value)
        self._remember_applied(interaction_id, fingerprint)
        return ack()

    async def steer(self, request: PromptSteer) -> None:
        """Queue one active input for the adapter and send its `written` receipt."""
        fingerprint = _fingerprint(request, exclude="")
        known = self._steers.get(request.input_id)
        if known is not None:
            if known.fingerprint != fingerprint:
                await self._steer_ack(
                    PromptSteerAck(
                        input_id=request.input_id,
                        accepted=False,
                        error_code=SteerErrorCode.INPUT_CONFLICT,
                    ),
                    record=False,  # the input's own receipt stays what a replay repeats
                )
            elif known.ack is not None:
                await self._steer_ack(known.ack)
            return
        code = ""
        if not self.declaration.steering:
            code = SteerErrorCode.UNSUPPORTED
        elif self.done_sent or self.cancel_requested:
            code = SteerErrorCode.RUN_INACTIVE
        elif len(self._steers) >= limits.MAX_STEER_INPUTS_PER_RUN:
            code = SteerErrorCode.INPUT_LIMIT
        elif self._written:
            code = SteerErrorCode.BUSY
        if code:
            await self._steer_ack(
                PromptSteerAck(input_id=request.input_id, accepted=False, error_code=code)
            )
            return
        self._steers[request.input_id] = _Steer(fingerprint, request.input)
        self._written.append(request.input_id)
        self._steer_written.set()
        await self._steer_ack(
            PromptSteerAck(input_id=request.input_id, accepted=False, written=True)
        )

    async def _steer_ack(self, ack: PromptSteerAck, record: bool = True) -> None:
        steer = self._steers.get(ack.input_id)
        if steer is not None and record:
            steer.ack = ack
        try:
            await asyncio.wait_for(
                self._send("prompt_steer_ack", self.run_id, ack),
                limits.RECEIPT_SEND_TIMEOUT_SECONDS,
            )
        except Exception:
            log.warning("run %s: steering receipt could not be sent", self.run_id)

    def _spawn_ack(self, input_id: str, ack: PromptSteerAck) -> None:
        task = asyncio.get_running_loop().create_task(self._steer_ack(ack))
        self._acks.add(task)
        task.add_done_callback(self._acks.discard)

    # Lifecycle.
    def start(self, messages: MessageInput, resume: str = "") -> None:
        self.resume = resume
        self._at_checkpoint = bool(resume)  # the one it continues from, until a frame
        # The task copies this context: every line logged while it drives the harness
        # (executors, adapters, tools) names the session and the turn.
        with turn_fields(self.session_id, self.run_id):
            self.task = asyncio.create_task(self._drive(messages), name=f"run-{self.run_id}")

    async def _drive(self, messages: MessageInput) -> None:
        self._driving = True
        log.debug("run %s started", self.run_id)
        try:
            if not self.cancel_requested:  # cancelled before the task first ran
                await self.executor.run(self.run_id, messages, self)
        except asyncio.CancelledError:
            if not (self.cancel_requested or self.paused):
                raise
        except OutcomeUnknown as exc:
            if self.cancel_requested:
                # Not a failure of the turn: its cancellation cannot be confirmed.
                log.warning("run %s: cancellation unconfirmed: %s", self.run_id, exc)
                self.cancel_unconfirmed = True
            else:
                await self._safe_error(*self._describe(exc))
        except HarnessError as exc:
            await self._safe_error(*self._describe(exc))
        except Exception as exc:
            log.exception("run %s: adapter failed", self.run_id)
            await self._safe_error(f"harness failure ({type(exc).__name__})")
        finally:
            self._abandon_pending()
            self.settled.set()
        await self.finish()
        log.debug("run %s ended", self.run_id)

    def _abandon_pending(self) -> None:
        for pending in (*self._calls.values(), *self._interactions.values()):
            if not pending.future.done():
                pending.future.cancel()
        self._calls.clear()
        self._interactions.clear()

    def _describe(self, exc: HarnessError) -> tuple[str, str, int]:
        """(text, engine code, HTTP status) of the `error` frame for an adapter failure.

        Only a NativeFailure is classified; an unsupported answer to a declared
        operation is a contract violation, which is never an engine failure."""
        if isinstance(exc, Unsupported):
            if getattr(self.declaration, exc.operation, False) is True:
                log.error(
                    "run %s: contract violation: declared %s answered unsupported",
                    self.run_id,
                    exc.operation,
                )
                violation = ContractViolation(
                    f"the declared operation {exc.operation} answered unsupported"
                )
                return f"harness contract violation: {violation}", "", 0
            return f"unsupported operation: {exc.operation} is not declared", "", 0
        if isinstance(exc, ContractViolation):
            return f"harness contract violation: {exc}", "", 0
        if isinstance(exc, Unavailable):
            return f"harness unavailable: {exc}", "", 0
        if isinstance(exc, OutcomeUnknown):
            return f"outcome unknown: {exc}", "", 0
        if isinstance(exc, NativeFailure):
            code, status = classify_engine_failure(exc.engine_code, exc.http_status)
            return f"native failure: {exc}", code, status
        return f"harness failure ({exc.code}): {exc}", "", 0

    async def _safe_error(self, text: str, code: str = "", http_status: int = 0) -> None:
        try:
            await self.emit("error", wire.Error(error=text, code=code, http_status=http_status))
        except Exception:
            log.warning("run %s: error frame could not be sent", self.run_id)

    async def finish(self) -> None:
        """Refuse unconsumed inputs, then send the Run's single `done`, once."""
        if self.done_sent:
            return
        for input_id in self._written:
            await self._steer_ack(
                PromptSteerAck(
                    input_id=input_id, accepted=False, error_code=SteerErrorCode.RUN_INACTIVE
                )
            )
        self._written = []
        if self._acks:
            await asyncio.wait(set(self._acks), timeout=limits.RECEIPT_SEND_TIMEOUT_SECONDS)
        snapshot = await self._take_snapshot()
        self.done_sent = True
        metadata = dict(self._metadata)
        if self.paused:
            metadata[wire.PAUSED_METADATA_KEY] = "true"
        # A harness that keeps its own session names it, so Core can send it back.
        native = getattr(self.executor, "native_session_id", "")
        if isinstance(native, str) and native:
            metadata["agent_session_id"] = native
        await self._send(
            "done",
            self.run_id,
            wire.Done(usage=self._usage, workspace_snapshot=snapshot, metadata=metadata or None),
        )

    async def _take_snapshot(self) -> str:
        """Snapshot the managed workspace as the Run ends (before `done`, so that Core
        learns of it with the outcome); "" when none was taken, or when the Run only
        paused (the turn has not ended)."""
        if self._snapshot is None or self.paused:
            return ""
        try:
            return await self._snapshot()
        except Exception:
            log.exception("run %s: workspace snapshot failed", self.run_id)
            return ""

    def request_pause(self) -> None:
        """Stop at the next checkpoint: at once when the last frame was one."""
        if self.done_sent or self.cancel_requested:
            return
        self.pause_requested = True
        if self._at_checkpoint and self._driving and self.task is not None:
            self.paused = True
            self.task.cancel()

    async def cancel(self, timeout: float) -> bool:
        """Ask the adapter to stop and wait for native settlement; return whether it did
        (False also when the adapter stopped without confirming it: `cancel_unconfirmed`)."""
        self.cancel_requested = True
        # A task that has not run yet is not cancelled: it would die before its first
        # line and never send `done`. It sees cancel_requested and settles at once.
        if self._driving and self.task is not None and not self.task.done():
            self.task.cancel()
        try:
            await asyncio.wait_for(self.settled.wait(), timeout)
        except TimeoutError:
            return False
        if self.task is not None:
            await asyncio.wait({self.task}, timeout=timeout)
        return not self.cancel_unconfirmed
