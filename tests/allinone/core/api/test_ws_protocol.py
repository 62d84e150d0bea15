"""The server's WebSocket protocol writing through `Coalesced`, against a real uvicorn
server and a websockets client on a loopback socket: the frames an endpoint sends in one
loop step are held until the step ends (counted in the write buffer, nothing yet on the
socket), then arrive in order; a close sent after them writes them first."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import uvicorn
from starlette.routing import WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect
from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosedOK

from allinone.app import _Server
from allinone.core.api.app import build_app
from allinone.core.api.ws_protocol import websocket_protocol
from allinone.startup import bind
from runtime.coalesce import Coalesced

WAIT = 10.0
FRAMES = ["one", "two", "three"]


@asynccontextmanager
async def serving() -> AsyncIterator[int]:
    servers: list[_Server] = []

    async def endpoint(websocket: WebSocket) -> None:
        await websocket.accept()
        command = await websocket.receive_text()
        for text in FRAMES:
            await websocket.send_text(text)
        if command == "close":
            await websocket.close()
            return
        (protocol,) = (
            p
            for p in servers[0].server_state.connections
            if isinstance(p, WebSocketsSansIOProtocol)
        )
        transport = protocol.transport
        assert isinstance(transport, Coalesced)
        sizes = [transport.get_write_buffer_size(), transport.wrapped.get_write_buffer_size()]
        await websocket.send_text(json.dumps(sizes))
        with contextlib.suppress(WebSocketDisconnect):
            await websocket.receive_text()  # until the client closes

    sock = bind("127.0.0.1", 0)
    app = build_app([WebSocketRoute("/ws", endpoint)], body_idle_seconds=WAIT)
    config = uvicorn.Config(app, log_config=None, lifespan="off", ws=websocket_protocol(Coalesced))
    servers.append(_Server(config))
    task = asyncio.create_task(servers[0].serve(sockets=[sock]))
    await asyncio.wait_for(servers[0].listening.wait(), WAIT)
    try:
        yield sock.getsockname()[1]
    finally:
        servers[0].should_exit = True
        await task
        sock.close()


def test_frames_of_one_step_are_held_counted_then_arrive_in_order_before_a_close() -> None:
    async def main() -> None:
        async with serving() as port:
            url = f"ws://127.0.0.1:{port}/ws"
            async with connect(url, compression=None) as client:
                await client.send("hold")
                received = [await asyncio.wait_for(client.recv(), WAIT) for _ in FRAMES]
                assert received == FRAMES
                held, written = json.loads(await asyncio.wait_for(client.recv(), WAIT))
                assert (held, written) == (sum(2 + len(text) for text in FRAMES), 0)
            async with connect(url, compression=None) as client:
                await client.send("close")
                received = [await asyncio.wait_for(client.recv(), WAIT) for _ in FRAMES]
                assert received == FRAMES
                try:
                    await asyncio.wait_for(client.recv(), WAIT)
                except ConnectionClosedOK as closed:
                    assert closed.rcvd is not None and closed.rcvd.code == 1000
                else:
                    raise AssertionError("the server's close did not arrive")

    asyncio.run(main())
