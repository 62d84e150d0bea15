"""A scripted Runtime for the Core side of the wire scenarios, written with `urllib` and
`websockets` only: it bootstraps, connects and sends exactly the frames it is given.
It never imports the Runtime's implementation (only the shared wire version).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import urllib.request
from typing import Any
from urllib.parse import urlencode

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from runtime.proto.scenarios import SILENCE_WINDOW_SECONDS, Mismatch, parse_wire
from runtime.proto.version import VERSION

FRAME_TIMEOUT = 5.0


class RuntimePeer:
    """One connection, seen from the scripted Runtime."""

    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws
        self.frames: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()
        self.closed = asyncio.Event()
        self._reader = asyncio.create_task(self._read(), name="scripted-runtime-reader")

    async def _read(self) -> None:
        try:
            async for message in self.ws:
                await self.frames.put(parse_wire(message))
        except ConnectionClosed:
            pass
        finally:
            self.closed.set()
            await self.frames.put(None)

    @property
    def close_code(self) -> int | None:
        received = self.ws.protocol.close_rcvd
        return None if received is None else received.code

    async def send(self, text: str) -> None:
        await self.ws.send(text)

    async def next_frame(self) -> dict[str, Any]:
        try:
            frame = await asyncio.wait_for(self.frames.get(), FRAME_TIMEOUT)
        except TimeoutError:
            raise AssertionError("Core sent no frame in time") from None
        if frame is None:
            raise AssertionError("the connection closed before Core's frame")
        return frame

    async def expect_silence(self) -> None:
        """The one timed wait: Core may send nothing within the window."""
        with contextlib.suppress(TimeoutError):
            frame = await asyncio.wait_for(self.frames.get(), SILENCE_WINDOW_SECONDS)
            if frame is not None:
                raise Mismatch(f"expected silence, Core sent {frame}")
            self.frames.put_nowait(None)

    async def wait_closed(self) -> None:
        try:
            await asyncio.wait_for(self.closed.wait(), FRAME_TIMEOUT)
        except TimeoutError:
            raise AssertionError("Core did not close the connection") from None

    def abort(self) -> None:
        """The transport dies under both ends: no closing handshake."""
        self.ws.transport.abort()

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            await self.ws.close()
        with contextlib.suppress(Exception):
            await self._reader


class ScriptedRuntime:
    def __init__(self, base_url: str, device_id: str, credential: str) -> None:
        self.base_url = base_url
        self.device_id = device_id
        self.credential = credential

    def _bootstrap(self) -> dict[str, Any]:
        request = urllib.request.Request(
            f"{self.base_url}/api/v1/agent-daemon/bootstrap",
            data=json.dumps({"device_id": self.device_id}).encode(),
            headers={
                "Authorization": f"Bearer {self.credential}",
                "Content-Type": "application/json",
            },
            method="POST",
        )
        with urllib.request.urlopen(request, timeout=FRAME_TIMEOUT) as reply:
            body: dict[str, Any] = json.loads(reply.read())
        return body

    async def bootstrap(self) -> dict[str, Any]:
        return await asyncio.to_thread(self._bootstrap)

    async def dial(self, ws_url: str, version: str = VERSION) -> ClientConnection:
        url = f"{ws_url}?{urlencode({'device_id': self.device_id, 'version': version})}"
        return await connect(
            url,
            additional_headers={"Authorization": f"Bearer {self.credential}"},
            open_timeout=FRAME_TIMEOUT,
            ping_interval=None,
            compression=None,
        )

    async def connect(self) -> RuntimePeer:
        info = await self.bootstrap()
        assert info["device_id"] == self.device_id and info["protocol_version"] == VERSION
        return RuntimePeer(await self.dial(info["ws_url"]))
