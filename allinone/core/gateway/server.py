"""HTTP shell of the gateway: `POST /api/v1/agent-daemon/bootstrap` and the WebSocket at
`/api/v1/agent-daemon/ws`. It authenticates, checks the exact wire version before any
dispatch, and moves frames between the socket and a Connection; it decides nothing else.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import logging
from collections.abc import Awaitable, Callable

import msgspec
from starlette.datastructures import Address
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route, WebSocketRoute
from starlette.types import Message
from starlette.websockets import WebSocket, WebSocketDisconnect

from allinone.core.gateway.connection import (
    CLOSE_POLICY_VIOLATION,
    CONNECTION_CLOSED,
    INVALID_HEARTBEAT,
    Connection,
    silent,
)
from allinone.core.gateway.refusals import RefusalLog
from allinone.core.gateway.registry import Registry
from runtime.proto import codec, limits
from runtime.proto.errors import DecodeError, DecodeErrorCode, ProtocolError
from runtime.proto.version import VERSION, is_compatible

log = logging.getLogger(__name__)

DeviceLookup = Callable[[str], Awaitable[str | None]]
MAX_BOOTSTRAP_BYTES = 64 * 1024
READ_DEADLINE_SLACK_SECONDS = 1.0
# The one answer to a device id and credential that do not match a registered device
# (wire-protocol.md lists unknown_device and bad_credential; one is used for both).
NOT_ACCEPTED = "unknown_device"
_NO_DIGEST = "0" * 64  # compared against when the device has no digest


def _error(status: int, code: str, detail: str) -> JSONResponse:
    return JSONResponse({"error": code, "detail": detail}, status_code=status)


class _TooLarge(Exception):
    """A bootstrap body past its limit; answered 413 in this endpoint's own format."""


async def _bounded_body(request: Request, limit: int) -> bytes:
    """The request body, refused (`_TooLarge`) by its declared length or as soon as the
    bytes received pass `limit`: never more than `limit` plus one chunk is held."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise _TooLarge
    received = bytearray()
    async for chunk in request.stream():
        received += chunk
        if len(received) > limit:
            raise _TooLarge
    return bytes(received)


def _address(client: Address | None) -> str:
    """The caller's address as the server saw it (a proxy's, behind one)."""
    return "an unknown address" if client is None else client.host


def _bearer(header: str | None) -> str | None:
    if not header or not header.startswith("Bearer "):
        return None
    token = header[len("Bearer ") :].strip()
    return token or None


class Gateway:
    def __init__(
        self,
        registry: Registry,
        device_digest: DeviceLookup,
        new_id: Callable[[str], str],
        heartbeat_seconds: int,
        public_ws_url: Callable[[], str],
        local_device: str = "",
        refusals: RefusalLog | None = None,
        read_timeout: float = limits.READ_TIMEOUT_SECONDS,
    ) -> None:
        # The in-process Runtime connects at every start: its comings and goings are
        # debug lines; another device's are worth an info line.
        self._local_device = local_device
        self.registry = registry
        self._device_digest = device_digest
        self._new_id = new_id
        self._heartbeat_seconds = heartbeat_seconds
        self._public_ws_url = public_ws_url
        self._refusals = refusals or RefusalLog()
        # A connection that sent no frame for this long is closed as silent (seed 000's
        # read deadline); tests shorten it.
        self._read_timeout = read_timeout

    def routes(self) -> list[Route | WebSocketRoute]:
        return [
            Route("/api/v1/agent-daemon/bootstrap", self.bootstrap, methods=["POST"]),
            WebSocketRoute("/api/v1/agent-daemon/ws", self.websocket),
        ]

    async def _authenticate(self, device_id: str, credential: str) -> str | None:
        """Return an error code, or None when the credential belongs to the device.

        A device that does not exist (or was revoked) and a wrong credential get the
        same code, and go through the same comparison, so a caller without the
        credential cannot tell which device ids exist."""
        digest = await self._device_digest(device_id)
        offered = hashlib.sha256(credential.encode()).hexdigest()
        if not hmac.compare_digest(offered, digest or _NO_DIGEST) or digest is None:
            return NOT_ACCEPTED
        return None

    async def bootstrap(self, request: Request) -> Response:
        credential = _bearer(request.headers.get("authorization"))
        if credential is None:
            return _error(401, "missing_bearer", "a bearer credential is required")
        try:
            raw = await _bounded_body(request, MAX_BOOTSTRAP_BYTES)
            body = msgspec.json.decode(raw, type=dict[str, str])
        except _TooLarge:
            return _error(413, "too_large", f"the body is limited to {MAX_BOOTSTRAP_BYTES} bytes")
        except msgspec.DecodeError:
            return _error(400, "bad_json", "the body must be a JSON object of strings")
        device_id = body.get("device_id", "")
        if not device_id:
            return _error(400, "missing_device_id", "device_id is required")
        failure = await self._authenticate(device_id, credential)
        if failure is not None:
            self._refusals.refused(_address(request.client), device_id, "bootstrap")
            return _error(401, failure, "the device credential was not accepted")
        return JSONResponse(
            {
                "device_id": device_id,
                "ws_url": self._public_ws_url(),
                "heartbeat_seconds": self._heartbeat_seconds,
                "protocol_version": VERSION,
            }
        )

    async def websocket(self, ws: WebSocket) -> None:
        device_id = ws.query_params.get("device_id", "")
        version = ws.query_params.get("version", "")
        credential = _bearer(ws.headers.get("authorization"))
        if credential is None:
            # Without a credential nothing else about the request is looked at.
            denial = _error(401, "missing_bearer", "a bearer credential is required")
            denial.headers["www-authenticate"] = "Bearer"
            await ws.send_denial_response(denial)
            return
        if not device_id or not version:
            await ws.send_denial_response(
                _error(400, "missing_params", "device_id and version are required")
            )
            return
        if not is_compatible(version):
            await ws.send_denial_response(
                _error(
                    426,
                    "incompatible_version",
                    f"this Core speaks wire version {VERSION}; "
                    f"the Runtime offered {version[:32]!r}",
                )
            )
            return
        failure = await self._authenticate(device_id, credential)
        if failure is not None:
            self._refusals.refused(_address(ws.client), device_id, "connection")
            await ws.send_denial_response(
                _error(401, failure, "the device credential was not accepted")
            )
            return
        await ws.accept()
        connection = Connection(device_id, self._new_id("conn"))
        self.registry.register(connection)
        log.log(self._level(device_id), "runtime device %s connected", device_id)
        writer = asyncio.create_task(self._write(ws, connection), name="gateway-writer")
        try:
            await self._read(ws, connection)
        finally:
            connection.close(connection.close_reason or CONNECTION_CLOSED)
            self.registry.unregister(connection)
            await _stop(writer)
            with contextlib.suppress(Exception):  # the socket may already be gone
                await ws.close(code=connection.close_code, reason=connection.close_reason)
            log.log(
                self._level(device_id),
                "runtime device %s disconnected (%s)",
                device_id,
                connection.close_reason,
            )

    def _level(self, device_id: str) -> int:
        return logging.DEBUG if device_id == self._local_device else logging.INFO

    async def _read(self, ws: WebSocket, connection: Connection) -> None:
        """Handle frames until the connection closes, or none arrived for the read timeout
        (one deadline for the connection, moved on at most once a second: it fires between
        `read_timeout - READ_DEADLINE_SLACK_SECONDS` and `read_timeout` after the last
        frame, without a timer per frame). A silent connection is closed saying so, and
        what observed it ends with that reason."""
        loop = asyncio.get_running_loop()
        timeout = self._read_timeout
        idle = asyncio.timeout_at(loop.time() + timeout)
        try:
            async with idle:
                while not connection.closed.is_set():
                    _extend(idle, loop.time(), timeout)
                    message = await ws.receive()
                    if message["type"] == "websocket.disconnect":
                        return
                    await self._handle(message, connection)
        except TimeoutError:
            if idle.expired():
                connection.close(silent(timeout))
        except WebSocketDisconnect:
            return

    async def _handle(self, message: Message, connection: Connection) -> None:
        data = message.get("text") or message.get("bytes") or b""
        try:
            frame = codec.decode_from_runtime(data)
        except DecodeError as exc:
            if exc.code == DecodeErrorCode.INVALID_CAPABILITIES:
                # The field is named in the log only; the close frame carries the code.
                log.warning(
                    "invalid heartbeat from %s (first invalid field %s); closing",
                    connection.device_id,
                    exc.field or "$",
                )
                connection.invalidate()
                connection.close(INVALID_HEARTBEAT, CLOSE_POLICY_VIOLATION)
                self.registry.declared()
                return
            log.warning("malformed frame from %s skipped: %s", connection.device_id, exc.code)
            return
        except ProtocolError as exc:
            log.warning("frame from %s skipped: %s", connection.device_id, exc.code)
            return
        await connection.route(frame)
        if frame.type == "heartbeat":
            self.registry.declared()

    async def _write(self, ws: WebSocket, connection: Connection) -> None:
        """Move queued envelopes to the socket; once the connection is closed (replaced,
        revoked, invalid), close the socket with its close code, which ends the reader."""
        while True:
            data = await connection.outbox.get()
            if data is None:
                break
            async with asyncio.timeout(limits.WRITE_DEADLINE_SECONDS):
                await ws.send_text(data.decode())
        with contextlib.suppress(Exception):  # the peer may already be gone
            await ws.close(code=connection.close_code, reason=connection.close_reason)


def _extend(idle: asyncio.Timeout, now: float, timeout: float) -> None:
    """Move the connection's read deadline to `timeout` from `now`, unless it was moved
    there less than `READ_DEADLINE_SLACK_SECONDS` (or half a short timeout) ago."""
    slack = min(READ_DEADLINE_SLACK_SECONDS, timeout / 2)
    when = idle.when()
    if when is None or when - now < timeout - slack:
        idle.reschedule(now + timeout)


async def _stop(task: asyncio.Task[None]) -> None:
    """Cancel a child task and wait for it to end without losing the caller's own
    cancellation: `asyncio.wait` never raises the child's outcome, only the awaiting
    task's own CancelledError."""
    task.cancel()
    await asyncio.wait({task})
    if not task.cancelled() and task.exception() is not None:
        log.debug("gateway writer ended with %r", task.exception())
