"""Durable subscriptions to preparation statuses and Run frames on one connection.

A subscription ends in one of two ways: its terminal frame arrived, or it was closed
with an explicit observation error (disconnect, replacement, overflow). Closing never
fabricates an `error` or `done` frame; readers check `error` when `next()` returns None.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from allinone.core.errors import CoreError
from runtime.proto.codec import Frame
from runtime.proto.execution import PreparationState, PreparationStatus


class ObservationError(CoreError):
    """Observation of a preparation or Run stopped; the native outcome is unknown."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class _Subscription:
    def __init__(self, buffer: int) -> None:
        self._queue: asyncio.Queue[Any] = asyncio.Queue(maxsize=buffer)
        self.error: ObservationError | None = None
        self.closed = False

    async def put(self, item: Any, timeout: float) -> None:
        """Deliver one frame; a reader that does not keep up within `timeout` overflows."""
        if self.closed:
            return
        if not self._queue.full():
            self._queue.put_nowait(item)  # the common case: no timer, no task
            return
        try:
            async with asyncio.timeout(timeout):
                await self._queue.put(item)
        except TimeoutError:
            self.fail("subscriber_overflow")

    def fail(self, reason: str) -> None:
        if self.closed:
            return
        self.closed = True
        self.error = ObservationError(reason)
        self._wake()

    def finish(self) -> None:
        self.closed = True
        self._wake()

    def _wake(self) -> None:
        # When full, the reader finds `closed` set after draining what is buffered.
        with contextlib.suppress(asyncio.QueueFull):
            self._queue.put_nowait(None)

    def ready(self) -> bool:
        """Whether `next()` returns at once (an item is buffered, or the subscription is
        closed), so a reader may call it without racing it against anything else."""
        return self.closed or not self._queue.empty()

    async def next(self, timeout: float | None = None) -> Any:
        """Return the next item, or None once closed (check `error`)."""
        if self.closed and self._queue.empty():
            return None
        if not self._queue.empty():
            return self._queue.get_nowait()
        async with asyncio.timeout(timeout):
            return await self._queue.get()

    def drain_nowait(self) -> list[Any]:
        items: list[Any] = []
        while not self._queue.empty():
            item = self._queue.get_nowait()
            if item is None:
                self._wake()
                break
            items.append(item)
        return items


class PreparationSubscription(_Subscription):
    """Statuses for one preparation request. Stale or duplicate revisions and statuses of
    another handle are ignored; `rejected` replies pass without the revision filter."""

    def __init__(self, buffer: int) -> None:
        super().__init__(buffer)
        self.handle = ""
        self.revision = 0

    def accept(self, status: PreparationStatus) -> bool:
        if status.state is PreparationState.REJECTED:
            return True
        if not status.handle or status.revision == 0:
            return False
        if self.handle and status.handle != self.handle:
            return False
        if status.revision <= self.revision:
            return False
        self.handle = status.handle
        self.revision = status.revision
        return True


class RunSubscription(_Subscription):
    """Frames of one Run, in order, ending after `done`."""

    def observe(self, frame: Frame) -> bool:
        return not self.closed
