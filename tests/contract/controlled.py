"""The controlled Harness adapter: a real implementation of `runtime.harness.base` whose
native side the wire scenarios drive (Runtime side only; never imports Core).

Preparation succeeds, fails or is held until the scenario completes it; a native turn
records its input and then does what `native` steps ask (finish, request a permission,
a choice or a function, take steered input); cancellation waits until the scenario
settles it; `close` fails until the scenario allows it. Everything it observed is kept
in counters that `expect` steps compare, and every change wakes `changed`.
"""

from __future__ import annotations

import asyncio
import collections
from collections.abc import Callable
from typing import Any

import msgspec

from runtime.harness.base import NativeFailure, RunContext
from runtime.proto.capabilities import AgentKindCapabilities
from runtime.proto.execution import ExecutionConfiguration
from runtime.proto.inputs import MessageInput, text_of
from runtime.proto.interactions import ChoiceQuestion
from runtime.proto.scenarios import Adapter, Native

WAIT_SECONDS = 5.0


class Signal:
    """A change notification: waiters re-check their condition after each change."""

    def __init__(self) -> None:
        self._event = asyncio.Event()

    def notify(self) -> None:
        self._event.set()
        self._event = asyncio.Event()

    async def until(self, condition: Callable[[], bool], timeout: float = WAIT_SECONDS) -> bool:
        """Wait until `condition()` holds; return False when `timeout` passes first."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            event = self._event
            if condition():
                return True
            remaining = deadline - loop.time()
            if remaining <= 0:
                return False
            try:
                await asyncio.wait_for(event.wait(), remaining)
            except TimeoutError:
                return condition()


class ControlledHarness:
    version = "1"

    def __init__(
        self, kind: str, declaration: AgentKindCapabilities, plan: Adapter, signal: Signal
    ) -> None:
        self.kind = kind
        self.declaration = declaration
        self._plan = plan
        self.changed = signal
        self.setups = 0
        self.turns = 0
        self.inputs: list[str] = []
        self.histories: list[list[str] | None] = []
        self.cancelled = 0
        self.steered: list[str] = []
        self.decisions: dict[str, Any] = {}
        self.close_attempts = 0
        self.closes = 0
        self.created = 0
        self.close_fails = plan.close == "fails"
        self.settled = asyncio.Event()
        self.close_allowed = asyncio.Event()
        self._held: collections.deque[asyncio.Future[None]] = collections.deque()
        self.turn: ControlledTurn | None = None

    @property
    def owned(self) -> int:
        return self.created - self.closes

    def snapshot(self) -> dict[str, Any]:
        return {
            "setups": self.setups,
            "turns": self.turns,
            "inputs": list(self.inputs),
            "histories": list(self.histories),
            "cancelled": self.cancelled,
            "steered": list(self.steered),
            "decisions": dict(self.decisions),
            "close_attempts": self.close_attempts,
            "closes": self.closes,
            "owned": self.owned,
        }

    def available(self) -> bool:
        return True

    async def create_executor(
        self, executor_id: str, configuration: ExecutionConfiguration
    ) -> ControlledExecutor:
        self.setups += 1
        self.changed.notify()
        if self._plan.setup == "held":
            gate: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._held.append(gate)
            await gate
        if self._plan.setup == "fails":
            raise NativeFailure("fixture setup failed")
        self.created += 1
        self.changed.notify()
        return ControlledExecutor(self, executor_id)

    async def retry_sleep(self, seconds: float) -> None:
        """The daemon's wait before retrying a cleanup: until the scenario allows it."""
        await self.close_allowed.wait()

    # Native steps.
    async def act(self, step: Native) -> None:
        if step.action == "complete_setup":
            self._held.popleft().set_result(None)
            return
        if step.action == "allow_close":
            self.close_fails = False
            self.close_allowed.set()
            return
        if not await self.changed.until(lambda: self.turn is not None and not self.turn.ended):
            raise AssertionError(f"native {step.action}: no native turn is running")
        assert self.turn is not None
        self.turn.commands.put_nowait(step)

    def settle(self) -> None:
        self.settled.set()

    def release_everything(self) -> None:
        """Teardown: nothing native may keep the daemon from stopping."""
        self.settled.set()
        self.close_allowed.set()
        self.close_fails = False
        while self._held:
            gate = self._held.popleft()
            if not gate.done():
                gate.set_result(None)


class ControlledExecutor:
    def __init__(self, harness: ControlledHarness, executor_id: str) -> None:
        self.executor_id = executor_id
        self._harness = harness

    async def run(self, run_id: str, messages: MessageInput, context: RunContext) -> None:
        harness = self._harness
        turn = ControlledTurn(harness, context)
        harness.turn = turn
        harness.turns += 1
        harness.inputs.append(text_of(messages))
        history = context.history
        harness.histories.append(
            None if history is None else [type(entry).__name__ for entry in history]
        )
        harness.changed.notify()
        try:
            await turn.play()
        except asyncio.CancelledError:
            harness.cancelled += 1
            harness.changed.notify()
            await harness.settled.wait()  # the scenario decides when cancellation settles
            raise
        finally:
            turn.ended = True
            harness.changed.notify()

    async def close(self) -> None:
        harness = self._harness
        harness.close_attempts += 1
        harness.changed.notify()
        if harness.close_fails:
            raise NativeFailure("fixture close failed")
        harness.closes += 1
        harness.changed.notify()


class ControlledTurn:
    def __init__(self, harness: ControlledHarness, context: RunContext) -> None:
        self._harness = harness
        self._context = context
        self.commands: asyncio.Queue[Native] = asyncio.Queue()
        self.ended = False

    async def play(self) -> None:
        while True:
            step = await self.commands.get()
            if step.action == "finish":
                return
            await self._do(step)
            self._harness.changed.notify()

    async def _do(self, step: Native) -> None:
        args = step.args
        decisions = self._harness.decisions
        if step.action == "permission":
            decisions[args["request_id"]] = await self._context.request_permission(
                args["request_id"], args["tool"], args["title"]
            )
        elif step.action == "choice":
            questions = msgspec.convert(args["questions"], list[ChoiceQuestion])
            outcome = await self._context.ask_choice(args["ask_id"], questions)
            decisions[args["ask_id"]] = {"answers": outcome.answers, "cancelled": outcome.cancelled}
        elif step.action == "function":
            result = await self._context.call_function(
                args["call_id"], args["name"], args["arguments"]
            )
            decisions[args["call_id"]] = {"success": result.success, "text": result.text}
        elif step.action == "take_steered":
            self._harness.steered.extend(text_of(m) for m in self._context.take_steered())
        else:
            raise AssertionError(f"native action {step.action} is not a turn action")
