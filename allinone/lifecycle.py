"""One ordered start-up and its reverse, within one shutdown budget.

The composition root starts each component and, right after it started, registers how to
stop it. Leaving the `async with` stops them last-in first-out, so shutdown is the reverse
of start-up by construction, whether the process is stopping normally or start-up failed
half-way (only what started is stopped).

The budget is one deadline set when stopping begins. Every stop step runs under it: a
step still running at the deadline is cancelled and logged, and the steps after it still
run (cut at the same deadline), so nothing that started is left unclosed and the whole
stop takes at most the budget plus the time the synchronous steps take (closing a socket,
a scheduler). A step that fails is logged and does not stop the steps after it. If the
stopping task is itself cancelled, every step still runs and the cancellation propagates.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from types import TracebackType
from typing import Any

from allinone.core.tasks import cancel_and_wait

log = logging.getLogger(__name__)


class Lifecycle:
    """`async with Lifecycle(budget) as life:` start components, registering their stops."""

    def __init__(self, budget: float) -> None:
        self.budget = budget
        self._stack = contextlib.AsyncExitStack()
        self._deadline: float | None = None

    async def __aenter__(self) -> Lifecycle:
        await self._stack.__aenter__()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        self._deadline = asyncio.get_running_loop().time() + self.budget
        return await self._stack.__aexit__(exc_type, exc, tb)

    def on_stop(self, name: str, stop: Callable[[], Awaitable[Any]]) -> None:
        """Stop with `await stop()`, cut at the shutdown deadline."""
        self._stack.push_async_callback(self._step, name, stop)

    def on_stop_sync(self, name: str, stop: Callable[[], object]) -> None:
        """Stop with a call that does not wait (closing a socket, setting a flag)."""
        self._stack.push_async_callback(self._sync_step, name, stop)

    def own(self, task: asyncio.Task[Any]) -> None:
        """`task` lives until stopping reaches it: then it is cancelled and awaited. A task
        that outlives the deadline stays cancelled; the event loop's end collects it."""
        self.on_stop(f"task {task.get_name()}", lambda: cancel_and_wait(task))

    async def _step(self, name: str, stop: Callable[[], Awaitable[Any]]) -> None:
        assert self._deadline is not None
        loop = asyncio.get_running_loop()
        started = loop.time()
        try:
            async with asyncio.timeout_at(self._deadline):
                await stop()
        except TimeoutError:
            log.error("stopping %s ran past the %.0fs shutdown budget", name, self.budget)
        except Exception:
            log.exception("stopping %s failed", name)
        else:
            log.debug("stopped %s in %.3fs", name, loop.time() - started)

    async def _sync_step(self, name: str, stop: Callable[[], object]) -> None:
        try:
            stop()
        except Exception:
            log.exception("stopping %s failed", name)


__all__ = ["Lifecycle"]
