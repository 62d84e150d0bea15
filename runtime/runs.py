"""One Run on the Runtime side: the task that drives the adapter, the context it uses to
reach Core, and the rule that exactly one `done` ends it, sent only after the native
turn has settled and the receipts of inputs it was processing have been sent.

Receipts kept here:
- function results and decisions: a replay with the same content is acknowledged
  `applied` again; different content for the same call is `decision_conflict`;
- steering: `written` when the input reaches the adapter's queue, `accepted` when the
  adapter takes it; an input still unconsumed when the Run ends is refused
  `run_inactive` before `done`.

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
    Unavailable,
    Unsupported,
)
from runtime.proto import limits
from runtime.proto import run as wire
from runtime.proto.capabilities import AgentKindCapabilities
from runtime.proto.errors import DecisionErrorCode, SteerErrorCode, classify_engine_failure
from runtime.proto.functions import FunctionCall, FunctionResult
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
    ) -> None:
        self.workspace = workspace
        self.sandbox = sandbox or Sandbox(Confinement(NONE))
        self.run_id = run_id
        self.executor = executor
        self.declaration = declaration
        self._send = send
        self._usage: wire.Usage | None = None
        self.done_sent = False
        self.cancel_requested = False
        self.task: asyncio.Task[None] | None = None
        self._driving = False
        self.settled = asyncio.Event()
        self._calls: dict[str, _Pending] = {}
        self._applied: dict[str, str] = {}  # call or interaction id -> result fingerprint
        self._interactions: dict[str, _Pending] = {}
        self._steers: dict[str, _Steer] = {}
        self._written: list[str] = []
        self._acks: set[asyncio.Task[None]] = set()

    # RunContext, used by the adapter.
    async def emit(self, type_: str, payload: msgspec.Struct) -> None:
        if self.done_sent:
            raise OutputClosed(self.run_id)
        if isinstance(payload, wire.Usage):
            self._usage = payload
        await self._send(type_, self.run_id, payload)

    async def call_function(self, call_id: str, name: str, arguments: str) -> FunctionOutcome:
        if not self.declaration.function_tools:
            raise Unsupported("function_tools", "function tools are not declared")
        pending = _Pending(asyncio.get_running_loop().create_future())
        self._calls[call_id] = pending
        await self.emit(
            "function_call",
            FunctionCall(call_id=call_id, name=name, arguments=msgspec.Raw(arguments.encode())),
        )
        result = await pending.future
        assert isinstance(result, FunctionOutcome)
        return result

    async def request_permission(
        self, request_id: str, tool: str, title: str, detail: str = ""
    ) -> bool:
        if not self.declaration.permissions:
            raise Unsupported("permissions", "permissions are not declared")
        pending = _Pending(asyncio.get_running_loop().create_future())
        self._interactions[request_id] = pending
        await self.emit(
            "permission_request",
            PermissionRequest(request_id=request_id, tool=tool, title=title, detail=detail),
        )
        return bool(await pending.future)

    async def ask_choice(self, ask_id: str, questions: list[ChoiceQuestion]) -> ChoiceOutcome:
        pending = _Pending(
            asyncio.get_running_loop().create_future(), question_ids=tuple(q.id for q in questions)
        )
        self._interactions[ask_id] = pending
        await self.emit(
            "prompt_for_user_choice", PromptForUserChoice(ask_id=ask_id, questions=questions)
        )
        result = await pending.future
        assert isinstance(result, ChoiceOutcome)
        return result

    def take_steered(self) -> list[MessageInput]:
        taken: list[MessageInput] = []
        for input_id in self._written:
            steer = self._steers[input_id]
            steer.taken = True
            taken.append(steer.messages)
            self._spawn_ack(input_id, PromptSteerAck(input_id=input_id, accepted=True))
        self._written = []
        return taken

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
    def start(self, messages: MessageInput) -> None:
        self.task = asyncio.create_task(self._drive(messages), name=f"run-{self.run_id}")

    async def _drive(self, messages: MessageInput) -> None:
        self._driving = True
        try:
            if not self.cancel_requested:  # cancelled before the task first ran
                await self.executor.run(self.run_id, messages, self)
        except asyncio.CancelledError:
            if not self.cancel_requested:
                raise
        except HarnessError as exc:
            await self._safe_error(*self._describe(exc))
        except Exception as exc:
            log.exception("run %s: adapter failed", self.run_id)
            await self._safe_error(f"harness failure ({type(exc).__name__})")
        finally:
            self._abandon_pending()
            self.settled.set()
        await self.finish()

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
        self.done_sent = True
        # A harness that keeps its own session names it, so Core can send it back.
        native = getattr(self.executor, "native_session_id", "")
        metadata = {"agent_session_id": native} if isinstance(native, str) and native else None
        await self._send("done", self.run_id, wire.Done(usage=self._usage, metadata=metadata))

    async def cancel(self, timeout: float) -> bool:
        """Ask the adapter to stop and wait for native settlement; return whether it did."""
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
        return True
