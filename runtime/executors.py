"""The Executor pool: every Executor one connection owns, and which are idle for reuse.

An Executor is owned from its creation until its close succeeded: while it prepares,
runs a Turn, waits idle for its Session's next Turn, or after a close that failed (it is
then never reused). Ownership is what counts against MAX_EXECUTORS, so a Runtime never
holds more native processes than it declared, even when a close could not be confirmed.

An idle Executor is kept per (Session, configuration fingerprint) and closed once it
stayed idle for the Executor idle timer, or when it is the oldest idle one and room is
needed. Closing happens on tasks the dispatcher owns (`spawn`), so a connection's close
waits for them.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from runtime.harness.base import Executor
from runtime.proto import limits
from runtime.proto.capabilities import AgentKindCapabilities
from runtime.timers import Timers

log = logging.getLogger(__name__)

# The Session and the fingerprint of the configuration an idle Executor was prepared for.
IdleKey = tuple[str, str]


@dataclass(frozen=True)
class _Owned:
    executor: Executor
    declaration: AgentKindCapabilities  # frozen at preparation: what its Runs may do
    environment_id: str  # the Environment it works in, "" for none


class ExecutorPool:
    def __init__(
        self, timers: Timers, spawn: Callable[[Callable[[], Awaitable[None]]], None]
    ) -> None:
        self._timers = timers
        self._spawn = spawn
        self._owned: dict[str, _Owned] = {}
        self._idle: dict[IdleKey, str] = {}  # oldest first
        self._expiries: dict[str, asyncio.TimerHandle] = {}  # executor id -> idle timer

    def __len__(self) -> int:
        return len(self._owned)

    def get(self, executor_id: str) -> Executor | None:
        owned = self._owned.get(executor_id)
        return None if owned is None else owned.executor

    def declaration(self, executor_id: str) -> AgentKindCapabilities:
        return self._owned[executor_id].declaration

    def add(
        self,
        executor_id: str,
        executor: Executor,
        declaration: AgentKindCapabilities,
        environment_id: str,
    ) -> None:
        self._owned[executor_id] = _Owned(executor, declaration, environment_id)

    def reusable(self, key: IdleKey) -> bool:
        return self._idle.get(key) in self._owned

    def take_idle(self, key: IdleKey) -> str | None:
        """The Session's idle Executor for this configuration, now busy; None if none."""
        executor_id = self._idle.pop(key, None)
        return executor_id if executor_id in self._owned else None

    def return_idle(self, key: IdleKey, executor_id: str) -> None:
        """A Turn or preparation ended: keep its Executor idle for the Session, closing
        the one it replaces and the oldest idle one past MAX_IDLE_EXECUTORS."""
        if executor_id not in self._owned:
            return
        previous = self._idle.get(key)
        if previous is not None and previous != executor_id:
            self.close(previous)
        self.went_idle(key, executor_id)
        if len(self._idle) > limits.MAX_IDLE_EXECUTORS:
            oldest = next(iter(self._idle))
            self.close(self._idle.pop(oldest))

    def went_idle(self, key: IdleKey, executor_id: str) -> None:
        """Keep the Executor for reuse by its Session; close it once it stayed idle for
        the Executor idle timer (reuse in between makes it busy, and the next idle
        period re-arms the timer)."""
        self._idle[key] = executor_id
        previous = self._expiries.pop(executor_id, None)
        if previous is not None:
            previous.cancel()

        def fire() -> None:
            self._expiries.pop(executor_id, None)
            if self._idle.get(key) == executor_id:
                del self._idle[key]
                log.info("executor %s idle past its timer; closing", executor_id)
                self.close(executor_id)

        self._expiries[executor_id] = asyncio.get_running_loop().call_later(
            self._timers.executor_idle, fire
        )

    async def make_room(self, active_preparations: int) -> bool:
        """Whether one more Executor fits under MAX_EXECUTORS, closing the oldest idle
        ones to make room. Executors being prepared, running, idle, or whose close
        failed all count: an Executor leaves the count only once its close succeeded."""
        while len(self._owned) + active_preparations >= limits.MAX_EXECUTORS:
            if not self._idle:
                return False
            executor_id = self._idle.pop(next(iter(self._idle)))
            owned = self._owned.get(executor_id)
            if owned is None:
                continue
            try:
                await owned.executor.close()
            except Exception:
                log.warning("executor %s cleanup unconfirmed; it stays owned", executor_id)
                return False
            self._owned.pop(executor_id, None)
        return True

    def close(self, executor_id: str) -> None:
        """Close an Executor on an owned task; it stays owned (never reused) until the
        close succeeds."""
        owned = self._owned.get(executor_id)
        if owned is None:
            return

        async def closing() -> None:
            await owned.executor.close()
            self._owned.pop(executor_id, None)

        self._spawn(closing)

    def close_environment(self, environment_id: str) -> None:
        """Close every Executor working in the Environment; an idle one leaves the idle
        set at once, so it is never reused while it closes."""
        for executor_id, owned in list(self._owned.items()):
            if owned.environment_id == environment_id:
                for key, idle in list(self._idle.items()):
                    if idle == executor_id:
                        del self._idle[key]
                self.close(executor_id)

    def stop_timers(self) -> None:
        for expiry in self._expiries.values():
            expiry.cancel()
        self._expiries.clear()

    async def close_all(self) -> bool:
        """Close every owned Executor; True once all closed. One whose close failed
        stays owned (and unusable), so the call may be retried."""
        self.stop_timers()
        self._idle.clear()
        closed = True
        for executor_id, owned in list(self._owned.items()):
            try:
                await owned.executor.close()
            except Exception:
                log.warning("executor %s cleanup unconfirmed; it stays owned", executor_id)
                closed = False
                continue
            self._owned.pop(executor_id, None)
        return closed
