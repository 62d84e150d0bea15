"""The WebSocket connection protocol the server runs (the Runtimes' link to Core):
uvicorn's sans-I/O websockets protocol writing through `runtime.coalesce.Coalesced`, so
the frames Core sends a Runtime in one loop step (a turn's several, a heartbeat's reply)
go out in one socket write, in order and byte for byte as separate writes would.

Flow control is uvicorn's own: the socket's transport still calls `pause_writing` and
`resume_writing` on this protocol, and `Coalesced` passes a step's writes on at once
when they would reach the transport's high-water mark, so it pauses when it would have.
"""

from __future__ import annotations

import asyncio

from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol

from runtime.coalesce import Coalesced


class CoalescedWebSocketProtocol(WebSocketsSansIOProtocol):
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        self.transport = Coalesced(self.transport, self.loop)
