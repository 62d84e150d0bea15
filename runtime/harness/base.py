"""The one small interface every harness adapter implements.

    HarnessError                    the adapter could not do what was asked
    +-- Unsupported                 the declaration does not include the operation
    +-- ContractViolation           a declared operation answered "unsupported"
    +-- NativeFailure               the native call failed (the outcome is known)

Contract for `Executor.run`: emit Run frames through the sink in order; return when the
native turn has settled. Cancellation arrives as `asyncio.CancelledError` inside `run`;
the adapter settles and re-raises. The dispatcher, not the adapter, sends `done`.
"""

from __future__ import annotations

from typing import Protocol

import msgspec

from runtime.proto.capabilities import AgentKindCapabilities
from runtime.proto.execution import ExecutionConfiguration
from runtime.proto.inputs import MessageInput


class HarnessError(Exception):
    code = "harness_error"


class Unsupported(HarnessError):
    code = "unsupported"


class ContractViolation(HarnessError):
    code = "contract_violation"


class NativeFailure(HarnessError):
    code = "native_failure"


class RunSink(Protocol):
    """Where an adapter sends the frames of one Run (never `done`)."""

    async def emit(self, type_: str, payload: msgspec.Struct) -> None: ...


class Executor(Protocol):
    executor_id: str

    async def run(self, run_id: str, messages: MessageInput, sink: RunSink) -> None: ...

    async def close(self) -> None: ...


class HarnessAdapter(Protocol):
    kind: str
    version: str
    declaration: AgentKindCapabilities

    def available(self) -> bool: ...

    async def create_executor(
        self, executor_id: str, configuration: ExecutionConfiguration
    ) -> Executor: ...
