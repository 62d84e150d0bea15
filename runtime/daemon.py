"""The Runtime daemon: bootstrap, connect, heartbeat, receive, reconnect.

The same code serves the in-process Runtime of `corebox serve` and `corebox daemon` on
another machine. Each connection gets a fresh Dispatcher; a lost connection cancels that
connection's work and nothing is replayed on the next one. 401, 403 and 426 are permanent:
the daemon stops reconnecting and `run` raises PermanentError.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable

import msgspec
from websockets.asyncio.client import ClientConnection
from websockets.exceptions import ConnectionClosed

from runtime.dispatcher import Dispatcher
from runtime.harness.registry import HarnessRegistry
from runtime.proto import codec, limits
from runtime.proto.errors import DecodeError, ProtocolError
from runtime.proto.heartbeat import Heartbeat
from runtime.transport import (
    PermanentError,
    TransientError,
    backoff_delay,
    bootstrap,
    open_socket,
)
from runtime.workspaces import Workspaces

log = logging.getLogger(__name__)
PERMANENT_CLOSE_CODE = 4001


class Daemon:
    def __init__(
        self,
        core_url: str,
        device_id: str,
        credential: str,
        harnesses: HarnessRegistry,
        build_version: str,
        sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
        workspaces: Workspaces | None = None,
        now_ms: Callable[[], int] = lambda: int(time.time() * 1000),
    ) -> None:
        self._sleep = sleep
        self._now_ms = now_ms
        self._workspaces = workspaces or Workspaces(None)
        self._core_url = core_url
        self._device_id = device_id
        self._credential = credential
        self._harnesses = harnesses
        self._build_version = build_version
        self._stopping = asyncio.Event()
        self._socket: ClientConnection | None = None
        self._dispatcher: Dispatcher | None = None
        self.connected = asyncio.Event()
        self.connections = 0

    async def run(self) -> None:
        """Connect and serve until `stop()`; reconnect after transient failures."""
        attempt = 0
        while not self._stopping.is_set():
            try:
                info = await bootstrap(self._core_url, self._credential, self._device_id)
                socket = await open_socket(info.ws_url, self._credential, info.device_id)
            except TransientError as exc:
                attempt += 1
                delay = backoff_delay(attempt)
                log.warning("runtime connection failed (%s); retrying in %.1fs", exc, delay)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._stopping.wait(), delay)
                continue
            except PermanentError:
                log.error("runtime connection permanently refused; not reconnecting")
                raise
            attempt = 0
            await self._serve(socket, info.heartbeat_seconds)

    async def _cleanup(self, dispatcher: Dispatcher) -> None:
        """Settle a lost connection's work before reconnecting. A cleanup failure keeps
        ownership and does not authorize a new connection: retry, serialized, with backoff."""
        failures = 0
        while not await dispatcher.close():
            failures += 1
            log.warning("runtime cleanup unconfirmed; retrying before reconnecting")
            if self._stopping.is_set():
                return
            await self._sleep(backoff_delay(failures))

    async def _serve(self, socket: ClientConnection, heartbeat_seconds: int) -> None:
        lock = asyncio.Lock()

        async def send(type_: str, id_: str, payload: msgspec.Struct | None) -> None:
            data = codec.encode(type_, id_, payload).decode()
            async with lock:
                await asyncio.wait_for(socket.send(data), limits.WRITE_DEADLINE_SECONDS)

        dispatcher = Dispatcher(
            self._harnesses, send, now_ms=self._now_ms, workspaces=self._workspaces
        )
        self._socket, self._dispatcher = socket, dispatcher
        self.connections += 1

        async def heartbeat() -> None:
            while True:
                beat = Heartbeat(
                    ts=int(time.time()),
                    active_requests=dispatcher.active_requests,
                    home_removal=False,
                    supported_agent_kinds=self._harnesses.supported_kinds(),
                    daemon_version=self._build_version,
                )
                await send("heartbeat", "", beat)
                self.connected.set()
                await asyncio.sleep(heartbeat_seconds)

        beats = asyncio.create_task(heartbeat(), name="runtime-heartbeat")
        try:
            async for message in socket:
                try:
                    frame = codec.decode_from_core(message)
                except DecodeError as exc:
                    log.warning("frame from core skipped: %s at %s", exc.code, exc.field or "$")
                    await dispatcher.refuse(exc)
                    continue
                except ProtocolError as exc:
                    log.warning("frame from core skipped: %s", exc.code)
                    continue
                await dispatcher.handle(frame)
        except ConnectionClosed as exc:
            if exc.rcvd is not None and exc.rcvd.code == PERMANENT_CLOSE_CODE:
                raise PermanentError("runtime retired by core", 4001) from exc
        finally:
            self.connected.clear()
            beats.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await beats
            with contextlib.suppress(Exception):
                await socket.close()
            await self._cleanup(dispatcher)
            self._socket = self._dispatcher = None
            log.info("runtime connection closed")

    async def stop(self, cleanup_deadline: float = 5.0) -> bool:
        """Stop reconnecting, settle this connection's work and close the socket.

        A cleanup that fails is retried serially (0.5 s doubling) until it settles or
        `cleanup_deadline` passes; what is still unsettled then stays owned, is logged, and
        the call returns False."""
        self._stopping.set()
        settled = True
        if self._dispatcher is not None:
            dispatcher = self._dispatcher
            loop = asyncio.get_running_loop()
            deadline = loop.time() + cleanup_deadline
            delay = 0.5
            settled = await dispatcher.close()
            while not settled and loop.time() + delay < deadline:
                await self._sleep(delay)
                delay *= 2
                settled = await dispatcher.close()
            if not settled:
                log.error("runtime cleanup unconfirmed at shutdown; resources stay owned")
        if self._socket is not None:
            with contextlib.suppress(Exception):
                await self._socket.close()
        return settled
