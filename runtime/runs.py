"""One Run on the Runtime side: the task that drives the adapter, the sink that keeps
its frames in order, and the rule that exactly one `done` ends it, sent only after the
native turn has settled."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

import msgspec

from runtime.harness.base import Executor, HarnessError
from runtime.proto import run as wire
from runtime.proto.inputs import MessageInput

log = logging.getLogger(__name__)

Send = Callable[[str, str, msgspec.Struct | None], Awaitable[None]]


class OutputClosed(Exception):
    """A frame was emitted after the Run's `done`."""


class Run:
    def __init__(self, run_id: str, executor: Executor, send: Send) -> None:
        self.run_id = run_id
        self.executor = executor
        self._send = send
        self._usage: wire.Usage | None = None
        self.done_sent = False
        self.cancel_requested = False
        self.task: asyncio.Task[None] | None = None
        self.settled = asyncio.Event()

    async def emit(self, type_: str, payload: msgspec.Struct) -> None:
        if self.done_sent:
            raise OutputClosed(self.run_id)
        if isinstance(payload, wire.Usage):
            self._usage = payload
        await self._send(type_, self.run_id, payload)

    def start(self, messages: MessageInput) -> None:
        self.task = asyncio.create_task(self._drive(messages), name=f"run-{self.run_id}")

    async def _drive(self, messages: MessageInput) -> None:
        try:
            await self.executor.run(self.run_id, messages, self)
        except asyncio.CancelledError:
            if not self.cancel_requested:
                raise
        except HarnessError as exc:
            await self._safe_emit(wire.Error(error=f"harness failure ({exc.code})"))
        except Exception as exc:
            log.exception("run %s: adapter failed", self.run_id)
            await self._safe_emit(wire.Error(error=f"harness failure ({type(exc).__name__})"))
        finally:
            self.settled.set()
        await self.finish()

    async def _safe_emit(self, payload: wire.Error) -> None:
        try:
            await self.emit("error", payload)
        except Exception:
            log.warning("run %s: error frame could not be sent", self.run_id)

    async def finish(self) -> None:
        """Send the Run's single `done` (with the last usage snapshot), once."""
        if self.done_sent:
            return
        self.done_sent = True
        await self._send("done", self.run_id, wire.Done(usage=self._usage))

    async def cancel(self, timeout: float) -> bool:
        """Ask the adapter to stop and wait for native settlement; return whether it settled."""
        self.cancel_requested = True
        if self.task is not None and not self.task.done():
            self.task.cancel()
        try:
            await asyncio.wait_for(self.settled.wait(), timeout)
        except TimeoutError:
            return False
        return True
