"""The one small interface every harness adapter implements.

    HarnessError                    the adapter could not do what was asked
    +-- Unsupported                 the operation is not supported (see below)
    +-- ContractViolation           a declared operation answered "unsupported"
    +-- Unavailable                 the harness or its native side cannot run now
    +-- NativeFailure               the native call failed (the outcome is known);
    |                               may carry an engine failure code and HTTP status
    +-- OutcomeUnknown              a native write may or may not have happened; it
                                    keeps its receipt and is never replayed

An adapter raises Unsupported naming the capability (`operation`). The Run turns it into
a ContractViolation when the declaration frozen at admission includes that capability:
a declared operation may not answer "unsupported". Only NativeFailure carries an
engine failure code; the others are reported as text and never classified.

Contract for `Executor.run`: drive one native turn, sending its frames and requests
through the RunContext in order, and return when the native turn has settled.
Cancellation arrives as `asyncio.CancelledError` inside `run`; the adapter settles and
re-raises. An adapter that cannot confirm that its native work stopped (a process it
cannot prove gone) raises OutcomeUnknown instead: the cancellation is then reported
unconfirmed (`cancel_failed`), never applied. The dispatcher, not the adapter, sends
`done`; an Executor whose harness keeps a native session of its own exposes its id as
`native_session_id` (a str), which `done` reports as `metadata.agent_session_id` and
Core sends back as `agent_session_id`. Every optional operation the context offers
(function calls, permissions, choices, steering) is checked against the declaration
frozen when the Executor was admitted, before the adapter is asked.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import msgspec

from runtime.confinement import Sandbox
from runtime.errors import RuntimeFault
from runtime.proto.capabilities import AgentKindCapabilities
from runtime.proto.execution import ExecutionConfiguration
from runtime.proto.history import HistoryEntry
from runtime.proto.inputs import InputContent, MessageInput
from runtime.proto.interactions import ChoiceQuestion
from runtime.proto.run import CheckpointBoundary


class HarnessError(RuntimeFault):
    code = "harness_error"


class Unsupported(HarnessError):
    """`operation` is the capability name (a field of AgentKindCapabilities) when the
    operation has one, else a short operation name."""

    code = "unsupported"

    def __init__(self, operation: str, message: str = "") -> None:
        super().__init__(message or f"{operation} is not supported")
        self.operation = operation


class ContractViolation(HarnessError):
    code = "contract_violation"


class Unavailable(HarnessError):
    code = "unavailable"


class NativeFailure(HarnessError):
    """`engine_code` is an EngineFailureCode value or ""; `http_status` is kept on the
    wire only for `connection_failed`. The message must not quote a credential or a
    prompt."""

    code = "native_failure"

    def __init__(self, message: str, engine_code: str = "", http_status: int = 0) -> None:
        super().__init__(message)
        self.engine_code = engine_code
        self.http_status = http_status


class OutcomeUnknown(HarnessError):
    code = "outcome_unknown"


class OutputTooLarge(HarnessError):
    """A frame the adapter emitted is larger than Core reads (the wire's frame limit): it
    was not sent, and the Run ends with an `error` saying so. Only this Run fails; the
    connection and every other Run on it go on."""

    code = "output_too_large"


@dataclass(frozen=True)
class FunctionOutcome:
    success: bool
    content: list[InputContent] = field(default_factory=list)

    @property
    def text(self) -> str:
        return "".join(getattr(part, "text", "") for part in self.content)


@dataclass(frozen=True)
class ChoiceOutcome:
    answers: dict[str, list[str]]
    cancelled: bool


class RunContext(Protocol):
    """What a Run offers its adapter. Requests wait for Core's answer; cancellation of
    the Run interrupts the wait."""

    @property
    def workspace(self) -> Path | None:
        """The bound workspace directory, or None without a local environment."""
        ...

    @property
    def sandbox(self) -> Sandbox:
        """What confines the commands the Run starts in its workspace."""
        ...

    @property
    def history(self) -> list[HistoryEntry] | None:
        """The session's committed conversation Core sent with the start, from which an
        adapter that keeps conversation memory rebuilds it; None leaves its memory as is."""
        ...

    @property
    def resume_cursor(self) -> str:
        """The cursor of a checkpoint this Run continues from, or "" for a new turn."""
        ...

    async def emit(self, type_: str, payload: msgspec.Struct) -> None: ...

    async def checkpoint(self, boundary: CheckpointBoundary, cursor: str) -> None:
        """Declare a safe point the harness could continue from with `cursor`; raises
        `asyncio.CancelledError` when the Run is paused there."""
        ...

    async def call_function(
        self, call_id: str, name: str, arguments: str, checkpoint: str = ""
    ) -> FunctionOutcome:
        """Send the call and wait for its result; with `checkpoint`, the wait is a
        checkpoint with that cursor."""
        ...

    async def wait_function(self, call_id: str) -> FunctionOutcome:
        """Wait for the result of a call sent before this Run resumed."""
        ...

    async def request_permission(
        self, request_id: str, tool: str, title: str, detail: str = "", checkpoint: str = ""
    ) -> bool: ...

    async def wait_permission(self, request_id: str) -> bool: ...

    async def ask_choice(
        self, ask_id: str, questions: list[ChoiceQuestion], checkpoint: str = ""
    ) -> ChoiceOutcome: ...

    async def wait_choice(self, ask_id: str, question_ids: tuple[str, ...]) -> ChoiceOutcome: ...

    def take_steered(self) -> list[MessageInput]:
        """Take every steered input written so far; taking one confirms its consumption."""
        ...

    async def wait_steered(self) -> None:
        """Return once a steered input is written and not yet taken (at once if one is
        waiting), for adapters that pass steering on while their native turn runs."""
        ...

    def denial(self, request_id: str) -> str:
        """The message Core sent with the denial of that permission request ("" when
        none), for the tool's result; taking it forgets it."""
        ...

    def annotate(self, key: str, value: str) -> None:
        """Record `value` under `key` in the metadata of the Run's `done` frame (a later
        value replaces an earlier one)."""
        ...


class Executor(Protocol):
    executor_id: str

    async def run(self, run_id: str, messages: MessageInput, context: RunContext) -> None: ...

    async def close(self) -> None: ...


class HarnessAdapter(Protocol):
    kind: str
    version: str
    declaration: AgentKindCapabilities

    def available(self) -> bool: ...

    async def create_executor(
        self, executor_id: str, configuration: ExecutionConfiguration
    ) -> Executor: ...
