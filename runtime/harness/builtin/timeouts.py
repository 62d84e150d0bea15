"""Bounded waits for model calls: no model call is waited on forever.

Three bounds, each a `ModelTimeouts` field (configured per Runtime; see the README):

- `connect`: opening the connection to the model server;
- `idle`: waiting for the server's answer to a request, then for each event of its
  stream. Only a whole event counts as progress: bytes that make none (an SSE comment
  such as `: keepalive`) do not restart the wait;
- `total`: one model call from the request to its last event, the SDK's own retries
  included.

The HTTP client is given `connect` (executor.py); this module imports no HTTP client,
so the adapter can name the bounds before `openai` is loaded.
A call that passes one fails with NativeFailure classified `request_timeout`, and its
HTTP stream is closed. `CallClock` keeps one call's deadlines: `within` bounds an
awaitable (the request), `paced` an event stream; neither ever holds a timeout across
a `yield`, so the consumer's own awaits are never cancelled by them.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterable, AsyncIterator, Awaitable
from dataclasses import dataclass
from typing import TypeVar, cast

from runtime.harness.base import NativeFailure
from runtime.proto.errors import EngineFailureCode

T = TypeVar("T")

CONNECT_SECONDS = 10.0
IDLE_SECONDS = 300.0
TOTAL_SECONDS = 600.0

_END = object()


@dataclass(frozen=True)
class ModelTimeouts:
    total: float = TOTAL_SECONDS
    idle: float = IDLE_SECONDS
    connect: float = CONNECT_SECONDS


class CallClock:
    """The deadlines of one model call, started when the clock is made."""

    def __init__(self, timeouts: ModelTimeouts) -> None:
        self._timeouts = timeouts
        self._loop = asyncio.get_running_loop()
        self._end = self._loop.time() + timeouts.total

    async def within(self, awaitable: Awaitable[T]) -> T:
        """`awaitable`'s result, waited for at most `idle` (and never past `total`)."""
        remaining = self._end - self._loop.time()
        idle = self._timeouts.idle
        try:
            async with asyncio.timeout(min(idle, remaining)):
                return await awaitable
        except TimeoutError as exc:
            if remaining <= idle:
                text = f"the model call took longer than {self._timeouts.total:g} s"
            else:
                text = f"the model server sent nothing for {idle:g} s"
            raise NativeFailure(text, EngineFailureCode.REQUEST_TIMEOUT.value) from exc

    def paced(self, events: AsyncIterable[T]) -> AsyncIterator[T]:
        """`events`, each waited for as `within` waits."""
        return _Paced(self, aiter(events))


class _Paced(AsyncIterator[T]):
    """An iterator, not an async generator: a consumer that stops early leaves nothing
    to finalize."""

    def __init__(self, clock: CallClock, events: AsyncIterator[T]) -> None:
        self._clock = clock
        self._events = events

    async def __anext__(self) -> T:
        event = await self._clock.within(anext(self._events, _END))
        if event is _END:
            raise StopAsyncIteration
        return cast(T, event)
