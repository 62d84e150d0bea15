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
from collections import deque
from collections.abc import Awaitable, Callable

import msgspec
from websockets.asyncio.client import ClientConnection
from websockets.exceptions import ConnectionClosed

from runtime.dispatcher import Dispatcher
from runtime.harness.registry import HarnessRegistry
from runtime.proto import codec, limits
from runtime.proto.errors import DecodeError, ProtocolError
from runtime.proto.heartbeat import Heartbeat
from runtime.runs import Send
from runtime.tasks import cancel_and_wait
from runtime.timers import Timers
from runtime.transport import (
    Backoff,
    PermanentError,
    TransientError,
    backoff_delay,
    bootstrap,
    open_socket,
)
from runtime.workspaces import Workspaces

log = logging.getLogger(__name__)
PERMANENT_CLOSE_CODE = 4001
# The close reason Core gives a connection superseded by a newer one of the same device.
REPLACED_CLOSE_REASON = "connection_replaced"
# The close reason of 4001 when the device was revoked (`corebox devices revoke`).
REVOKED_CLOSE_REASON = "device_revoked"
# A connection that stayed up this long starts the reconnect schedule over: Core kept it
# open past its own read deadline (60 s without a frame), so it accepted the heartbeats,
# and it is longer than any backoff delay, so two daemons replacing each other never
# qualify.
HEALTHY_CONNECTION_SECONDS = 2 * limits.BACKOFF_MAX_SECONDS


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
        backoff: Backoff | None = None,
        healthy_seconds: float = HEALTHY_CONNECTION_SECONDS,
        clock: Callable[[], float] = time.monotonic,
        timers: Timers | None = None,
        announce_level: int = logging.INFO,
    ) -> None:
        self._timers = timers or Timers()
        self._announce_level = announce_level
        self._failed_attempts = 0  # since the last accepted connection
        self._lost_at: float | None = None  # when the last connection ended, or dialing began
        self._backoff = backoff or Backoff()
        self._healthy_seconds = healthy_seconds
        self._clock = clock
        self.delays: deque[float] = deque(maxlen=64)  # the latest reconnect delays, in order
        self._sleep = sleep
        self._now_ms = now_ms
        self._workspaces = workspaces or Workspaces(None)
        self._core_url = core_url
        self._device_id = device_id
        self._credential = credential
        self._harnesses = harnesses
        self._build_version = build_version
        self._stopping = asyncio.Event()
        self._closing: asyncio.Task[None] | None = None
        self._socket: ClientConnection | None = None
        self._dispatcher: Dispatcher | None = None
        self.connected = asyncio.Event()
        self.connections = 0

    async def run(self) -> None:
        """Connect and serve until `stop()`.

        The first attempt is immediate. After any failed attempt and after any accepted
        connection closes (whoever closed it), the next attempt waits the backoff. The
        schedule starts over only after a connection stayed up `healthy_seconds` and was
        not replaced by another holder of the same credential, so a Core that closes at
        once, or two daemons sharing a credential, reconnect a few times a minute."""
        while not self._stopping.is_set():
            try:
                info = await bootstrap(self._core_url, self._credential, self._device_id)
                socket = await open_socket(info.ws_url, self._credential, info.device_id)
            except TransientError as exc:
                self._failed_attempts += 1
                if self._lost_at is None:
                    self._lost_at = self._clock()
                await self._wait_backoff(f"not connected: {exc}")
                continue
            except PermanentError as exc:
                refused = PermanentError(self._refusal(exc), exc.status)
                log.error("runtime %s; not reconnecting", refused)
                raise refused from exc
            if self._stopping.is_set():  # stopped while dialing: serve nothing
                with contextlib.suppress(Exception):
                    await socket.close()
                return
            opened = self._clock()
            self._announce(opened)
            reason = await self._serve(socket, info.heartbeat_seconds)
            self._lost_at = self._clock()
            if self._stopping.is_set():
                return
            if reason == REPLACED_CLOSE_REASON:
                log.warning(
                    "runtime device %s was replaced by another connection holding the same "
                    "credential",
                    self._device_id,
                )
            elif self._clock() - opened >= self._healthy_seconds:
                self._backoff.reset()
            await self._wait_backoff(f"connection closed ({reason or 'no reason'})")

    def _announce(self, now: float) -> None:
        """One line per accepted connection, naming Core's address and the device (never
        the credential); a reconnection also says after how many failed attempts and how
        long the Runtime was without a connection."""
        failed, self._failed_attempts = self._failed_attempts, 0
        if self.connections == 0 and failed == 0:
            log.log(
                self._announce_level,
                "runtime connected to core at %s as device %s",
                self._core_url,
                self._device_id,
            )
            return
        log.info(
            "runtime %s to core at %s as device %s after %d failed attempt%s, %.1f s without "
            "a connection",
            "reconnected" if self.connections else "connected",
            self._core_url,
            self._device_id,
            failed,
            "" if failed == 1 else "s",
            now - (now if self._lost_at is None else self._lost_at),
        )

    def _refusal(self, exc: PermanentError) -> str:
        """What a permanent refusal means for the operator. Core gives one answer to an
        unknown device, a revoked one and a wrong credential (it does not tell a caller
        without the credential which devices exist), so a 401 names what to check."""
        refused = f"core at {self._core_url} refused device {self._device_id} ({exc})"
        if exc.status != 401:
            return refused
        return (
            f"{refused}: Core has no device with that id and credential; check the "
            "credential file and the device id; a revoked device needs a new credential "
            "from `corebox devices create`"
        )

    def _retirement(self, reason: str) -> str:
        """What Core's permanent close (4001) says, with the reason it gave."""
        if reason == REVOKED_CLOSE_REASON:
            return (
                f"core at {self._core_url} revoked device {self._device_id}; a new credential "
                "comes from `corebox devices create`"
            )
        said = f" ({reason})" if reason else ""
        return f"core at {self._core_url} retired device {self._device_id}{said}"

    async def _wait_backoff(self, what: str) -> None:
        """Wait the next backoff delay; `stop()` ends the wait early."""
        delay = self._backoff.next_delay()
        log.warning("runtime %s; reconnecting in %.1fs", what, delay)
        self.delays.append(delay)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._stopping.wait(), delay)

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

    async def _serve(self, socket: ClientConnection, heartbeat_seconds: int) -> str:
        """Serve one accepted connection until it closes; return Core's close reason."""
        lock = asyncio.Lock()

        async def send(type_: str, id_: str, payload: msgspec.Struct) -> None:
            assert codec.type_of(payload) == type_, "the payload names its own type"
            # UTF-8 JSON, sent as a text frame as it is. A frame past the frame limit
            # raises FrameTooLarge here, unsent: Core would close the connection on it.
            data = codec.encode_to_send(payload, id_)
            if not lock.locked() and _fits(socket, len(data)):
                # Nothing can hold this send: no other sender, and the frame stays under
                # the transport's high-water mark, so no flow-control wait: no timer.
                async with lock:
                    await socket.send(data, text=True)
                return
            async with lock:
                async with asyncio.timeout(limits.WRITE_DEADLINE_SECONDS):
                    await socket.send(data, text=True)

        dispatcher = Dispatcher(
            self._harnesses,
            send,
            now_ms=self._now_ms,
            workspaces=self._workspaces,
            timers=self._timers,
            on_shutdown=lambda reason: self._shutdown_requested(socket, reason),
        )
        self._socket, self._dispatcher = socket, dispatcher
        self.connections += 1

        beats = asyncio.create_task(
            self._heartbeats(send, dispatcher, heartbeat_seconds), name="runtime-heartbeat"
        )
        try:
            await self._receive(socket, dispatcher)
        except ConnectionClosed as exc:
            if exc.rcvd is not None and exc.rcvd.code == PERMANENT_CLOSE_CODE:
                retired = PermanentError(self._retirement(exc.rcvd.reason), 4001)
                log.error("runtime %s; not reconnecting", retired)
                raise retired from exc
        finally:
            received = socket.protocol.close_rcvd
            self.connected.clear()
            await cancel_and_wait(beats)
            with contextlib.suppress(Exception):
                await socket.close()
            await self._cleanup(dispatcher)
            self._socket = self._dispatcher = None
            log.info("runtime connection closed")
        return "" if received is None else received.reason

    async def _heartbeats(self, send: Send, dispatcher: Dispatcher, seconds: int) -> None:
        """A heartbeat at once, then every `seconds`, until cancelled."""
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
            await asyncio.sleep(seconds)

    @staticmethod
    async def _receive(socket: ClientConnection, dispatcher: Dispatcher) -> None:
        """Hand each frame to the dispatcher until the socket closes; an undecodable one
        is skipped, or refused when its envelope identifies an admission request."""
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

    def _shutdown_requested(self, socket: ClientConnection, reason: str) -> None:
        """Core sent `device_shutdown`: stop reconnecting and close this connection; the
        serve loop then settles Runs and closes Executors, and `run` returns."""
        log.warning(
            "core asked runtime device %s to shut down (%s); not reconnecting",
            self._device_id,
            reason or "no reason",
        )
        self._stopping.set()
        self._closing = asyncio.create_task(socket.close(), name="runtime-shutdown-close")

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


FRAME_HEADER_MAX_BYTES = 14  # a masked client frame's header, at its longest


def _fits(socket: ClientConnection, size: int) -> bool:
    """Whether a frame of `size` payload bytes, written now, stays within the socket's
    write buffer high-water mark (so the send cannot wait for the peer to read)."""
    transport = socket.transport
    if transport.is_closing():
        return False
    _, high = transport.get_write_buffer_limits()
    return transport.get_write_buffer_size() + size + FRAME_HEADER_MAX_BYTES <= high
