"""The WebSocket connection protocol the server runs (the Runtimes' link to Core):
uvicorn's sans-I/O websockets protocol writing through a view of its transport. The
composition root passes `runtime.coalesce.Coalesced`, so the frames Core sends a Runtime
in one loop step (a turn's several) go out in one socket write, in order and byte for
byte as separate writes would.

Flow control stays uvicorn's own: the socket's transport still calls `pause_writing` and
`resume_writing` on the protocol, and the view passes a step's writes on at once when
they would reach the transport's high-water mark, so it pauses when it would have.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol

TransportView = Callable[[asyncio.Transport, asyncio.AbstractEventLoop], asyncio.Transport]


def websocket_protocol(view: TransportView) -> type[WebSocketsSansIOProtocol]:
    """uvicorn's sans-I/O WebSocket protocol, each connection writing through `view`."""

    class ViewedWebSocketProtocol(WebSocketsSansIOProtocol):
        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            super().connection_made(transport)
            self.transport = view(self.transport, self.loop)

    return ViewedWebSocketProtocol
