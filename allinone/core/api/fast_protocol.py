"""The HTTP/1.1 connection protocol on uvicorn's httptools parser (C, llhttp), bounded
as `protocol.BoundedH11Protocol` is: a complete request head must arrive within
`HEADER_SECONDS` of the connection opening and of each response completing, and a head
still incomplete past `MAX_HEADER_BYTES` is answered 400 and the connection closed.

httptools does not bound a head's size itself, so the bytes fed while a head is
incomplete are counted here: of the read a head begins in, what follows the previous
request's body (its head, when it came in the same read, counts too: an over-count of at
most one bounded head), then every later read until the head completes. Importing this
module fails where httptools is not installed; `protocol.http_protocol` then falls back
to h11.

A response's head is held until its body's first write in the same loop step, so the
two go out in one write (`_HeadHeld`); a head with no body in that step goes out at the
step's end.
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from allinone.core.api.protocol import INVALID_REQUEST, MAX_HEADER_BYTES, HeadDeadline


class BoundedHttpToolsProtocol(HeadDeadline, HttpToolsProtocol):
    max_header_bytes = MAX_HEADER_BYTES

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._last_head = object()  # replaced as each request head completes
        self._head_bytes: int | None = None  # bytes fed since the current head began
        self._read_body = 0  # body bytes the parser has taken from the current read

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm_header_deadline()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm_header_deadline()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        self._read_body = 0
        super().data_received(data)
        if self._head_bytes is None or self.transport.is_closing():
            return
        self._head_bytes += len(data)
        if self._head_bytes > self.max_header_bytes:
            self.logger.warning(INVALID_REQUEST)
            self.send_400_response(INVALID_REQUEST)

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._head_bytes = -self._read_body  # the earlier body of this read is not head

    def on_body(self, body: bytes) -> None:
        self._read_body += len(body)
        super().on_body(body)

    def on_headers_complete(self) -> None:
        self._head_bytes = None
        self._last_head = object()
        self._disarm_header_deadline()
        super().on_headers_complete()
        cycle = self.cycle
        if cycle is not None and cycle.transport is self.transport:  # a new request's
            cycle.transport = _HeadHeld(self.transport, self.loop)

    def on_response_complete(self) -> None:
        # Armed first: a pipelined request started by the call below completes a head
        # and so disarms the deadline.
        self._arm_header_deadline()
        super().on_response_complete()

    def _head_mark(self) -> object:
        return self._last_head


class _HeadHeld(asyncio.Transport):
    """One request's view of its connection: its first write (the response's head, or
    `100 Continue`) is held until its next write in the same loop step, and written
    with it, or alone when the step ends; order is kept (held bytes always go first)."""

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__()
        self._transport = transport
        self._loop = loop
        self._first = True
        self._held: bytes | None = None

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if self._first:
            self._first = False
            self._held = bytes(data)
            self._loop.call_soon(self._release)
            return
        held, self._held = self._held, None
        self._transport.write(data if held is None else held + data)

    def _release(self) -> None:
        held, self._held = self._held, None
        if held is not None:
            self._transport.write(held)

    def close(self) -> None:
        self._release()
        self._transport.close()

    def is_closing(self) -> bool:
        return self._transport.is_closing()
