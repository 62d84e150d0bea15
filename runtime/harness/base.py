"""The one small interface every harness adapter implements.

    HarnessError                    the adapter could not do what was asked
    +-- Unsupported                 the declaration does not include the operation
    +-- ContractViolation           a declared operation answered "unsupported"
    +-- NativeFailure               the native call failed (the outcome is known)

Contract for `Executor.run`: drive one native turn, sending its frames and requests
through the RunContext in order, and return when the native turn has settled.
Cancellation arrives as `asyncio.CancelledError` inside `run`; the adapter settles and
re-raises. The dispatcher, not the adapter, sends `done`. Every optional operation the
context offers (function calls, permissions, choices, steering) is checked against the
declaration frozen when the Executor was admitted, before the adapter is asked.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

import msgspec

from runtime.proto.capabilities import AgentKindCapabilities
from runtime.proto.execution import ExecutionConfiguration
from runtime.proto.inputs import InputContent, MessageInput
from runtime.proto.interactions import ChoiceQuestion


class HarnessError(Exception):
    code = "harness_error"


class Unsupported(HarnessError):
    code = "unsupported"


class ContractViolation(HarnessError):
    code = "contract_violation"


class NativeFailure(HarnessError):
    code = "native_failure"


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

    async def emit(self, type_: str, payload: msgspec.Struct) -> None: ...

    async def call_function(self, call_id: str, name: str, arguments: str) -> FunctionOutcome: ...

    async def request_permission(
        self, request_id: str, tool: str, title: str, detail: str = ""
    ) -> bool: ...

    async def ask_choice(self, ask_id: str, questions: list[ChoiceQuestion]) -> ChoiceOutcome: ...

    def take_steered(self) -> list[MessageInput]:
        """Take every steered input written so far; taking one confirms its consumption."""
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
