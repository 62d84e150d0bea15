"""A scripted Core for the Runtime side of the wire scenarios: a bootstrap HTTP endpoint
and a WebSocket endpoint on loopback ports, written with asyncio and `websockets` only.

It checks what the Runtime's transport must do (POST bootstrap with the Bearer
credential; connect with `device_id` and `version` query parameters, the credential only
in the Authorization header), answers HTTP 426 to any version but the one it speaks, and
hands each accepted connection to the test as a `CorePeer`. Heartbeats are decoded
strictly with the shared protocol and kept apart from the scenario's frames.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Callable
from http import HTTPStatus
from typing import Any
from urllib.parse import parse_qs, urlsplit

from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.exceptions import ConnectionClosed
from websockets.http11 import Request, Response

from runtime.proto import codec, limits
from runtime.proto.errors import ProtocolError
from runtime.proto.heartbeat import Heartbeat
from runtime.proto.scenarios import SILENCE_WINDOW_SECONDS, Mismatch, parse_wire
from tests.contract.controlled import Signal

BOOTSTRAP_PATH = "/api/v1/agent-daemon/bootstrap"
WS_PATH = "/api/v1/agent-daemon/ws"
FRAME_TIMEOUT = 5.0


class CorePeer:
    """One accepted connection, seen from the scripted Core."""

    def __init__(self, ws: ServerConnection, signal: Signal) -> None:
        self._ws = ws
        self._signal = signal
        self.frames: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()
        self.heartbeats: list[Heartbeat] = []
        self.violations: list[str] = []
        self.closed = asyncio.Event()

    async def serve(self) -> None:
        try:
            async for message in self._ws:
                try:
                    frame = codec.decode_from_runtime(message)
                except ProtocolError as exc:
                    self.violations.append(f"undecodable frame from the Runtime: {exc}")
                    continue
                if frame.type == "heartbeat":
                    self.heartbeats.append(frame.payload)
                    self._signal.notify()
                    continue
                await self.frames.put(parse_wire(message))
        except ConnectionClosed:
            pass
        finally:
            self.closed.set()
            await self.frames.put(None)
            self._signal.notify()

    async def first_heartbeat(self) -> Heartbeat:
        if not await self._signal.until(lambda: bool(self.heartbeats)):
            raise AssertionError("the Runtime sent no heartbeat after connecting")
        return self.heartbeats[0]

    async def next_frame(self) -> dict[str, Any]:
        try:
            frame = await asyncio.wait_for(self.frames.get(), FRAME_TIMEOUT)
        except TimeoutError:
            raise AssertionError("the Runtime sent no frame in time") from None
        if frame is None:
            raise AssertionError("the connection closed before the Runtime's frame")
        return frame

    async def expect_silence(self) -> None:
        """The one timed wait: nothing but heartbeats may arrive within the window."""
        with contextlib.suppress(TimeoutError):
            frame = await asyncio.wait_for(self.frames.get(), SILENCE_WINDOW_SECONDS)
            if frame is not None:
                raise Mismatch(f"expected silence, the Runtime sent {frame}")
            self.frames.put_nowait(None)

    async def send(self, text: str) -> None:
        await self._ws.send(text)

    def abort(self) -> None:
        """The transport dies under both ends: no closing handshake."""
        self._ws.transport.abort()

    async def close(self, code: int, reason: str = "") -> None:
        await self._ws.close(code, reason)


class ScriptedCore:
    def __init__(self, device_id: str, credential: str, version: str, signal: Signal) -> None:
        self.device_id = device_id
        self.credential = credential
        self.version = version  # the wire version this Core speaks
        self.signal = signal
        self.bootstraps = 0
        self.dials = 0
        self.accepted = 0
        self.violations: list[str] = []
        # Asked at each bootstrap before anything else: True answers it 503 (Core is
        # there but not serving), as a Core restarting does.
        self.unavailable: Callable[[], bool] = lambda: False
        self.peers: asyncio.Queue[CorePeer] = asyncio.Queue()
        self._all: list[CorePeer] = []
        self._http: asyncio.Server | None = None
        self._ws: Server | None = None

    async def __aenter__(self) -> ScriptedCore:
        self._http = await asyncio.start_server(self._bootstrap, "127.0.0.1", 0)
        self._ws = await serve(
            self._accept,
            "127.0.0.1",
            0,
            process_request=self._check_upgrade,
            max_size=limits.MAX_FRAME_BYTES,
            ping_interval=None,
            compression=None,
        )
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._ws is not None:
            self._ws.close()
            await self._ws.wait_closed()
        if self._http is not None:
            self._http.close()
            await self._http.wait_closed()

    @property
    def core_url(self) -> str:
        assert self._http is not None
        port = self._http.sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}/api/v1"

    @property
    def ws_url(self) -> str:
        assert self._ws is not None
        port = next(iter(self._ws.sockets)).getsockname()[1]
        return f"ws://127.0.0.1:{port}{WS_PATH}"

    def all_violations(self) -> list[str]:
        return [*self.violations, *(v for peer in self._all for v in peer.violations)]

    async def next_peer(self) -> CorePeer:
        try:
            return await asyncio.wait_for(self.peers.get(), FRAME_TIMEOUT)
        except TimeoutError:
            raise AssertionError("the Runtime did not connect in time") from None

    # Bootstrap: one POST per connection attempt.
    async def _bootstrap(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1")
            request_line, *header_lines = head.split("\r\n")
            method, target, _ = request_line.split(" ", 2)
            headers = {
                name.strip().lower(): value.strip()
                for name, _, value in (line.partition(":") for line in header_lines if line)
            }
            body = await reader.readexactly(int(headers.get("content-length", "0")))
            self.bootstraps += 1
            status, reply = self._answer_bootstrap(method, target, headers, body)
            data = json.dumps(reply).encode()
            writer.write(
                f"HTTP/1.1 {status} {HTTPStatus(status).phrase}\r\n"
                f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n"
                "Connection: close\r\n\r\n".encode()
                + data
            )
            await writer.drain()
        finally:
            writer.close()

    def _answer_bootstrap(
        self, method: str, target: str, headers: dict[str, str], body: bytes
    ) -> tuple[int, dict[str, Any]]:
        if self.unavailable():
            return 503, {"error": "unavailable"}
        if method != "POST" or target != BOOTSTRAP_PATH:
            self.violations.append(f"bootstrap sent {method} {target}")
            return 404, {"error": "not_found"}
        if headers.get("authorization") != f"Bearer {self.credential}":
            self.violations.append("bootstrap without the Bearer credential")
            return 401, {"error": "bad_credential"}
        if json.loads(body or b"{}").get("device_id") != self.device_id:
            self.violations.append("bootstrap names another device")
            return 401, {"error": "unknown_device"}
        return 200, {
            "device_id": self.device_id,
            "ws_url": self.ws_url,
            "heartbeat_seconds": 3600,  # one heartbeat per connection: the one at connect
            "protocol_version": self.version,
        }

    # The WebSocket.
    def _check_upgrade(self, connection: ServerConnection, request: Request) -> Response | None:
        self.dials += 1
        url = urlsplit(request.path)
        query = parse_qs(url.query)
        if self.credential in request.path:
            self.violations.append("the credential appeared in the URL")
        if url.path != WS_PATH:
            return connection.respond(HTTPStatus.NOT_FOUND, "not found\n")
        if request.headers.get("Authorization") != f"Bearer {self.credential}":
            self.violations.append("upgrade without the Bearer credential")
            return connection.respond(HTTPStatus.UNAUTHORIZED, '{"error":"bad_credential"}')
        if query.get("device_id") != [self.device_id]:
            self.violations.append("upgrade names another device")
            return connection.respond(HTTPStatus.UNAUTHORIZED, '{"error":"unknown_device"}')
        if query.get("version") != [self.version]:
            return connection.respond(
                HTTPStatus.UPGRADE_REQUIRED, '{"error":"incompatible_version"}'
            )
        return None

    async def _accept(self, ws: ServerConnection) -> None:
        self.accepted += 1
        peer = CorePeer(ws, self.signal)
        self._all.append(peer)
        self.peers.put_nowait(peer)
        self.signal.notify()
        await peer.serve()
