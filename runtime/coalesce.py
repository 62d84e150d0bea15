"""A transport view that joins the writes of one event-loop step into one socket write.

Each end of the Core-Runtime WebSocket writes one frame per `write()`; a turn sends
several frames in the same loop step, each its own `send` system call. `Coalesced`
holds a step's writes and hands them to the transport it wraps as one write when the
step ends (one `loop.call_soon` per step), so the bytes on the wire, and their order,
are those of the separate writes.

Nothing waits past the end of the step, and flow control sees every byte:
  * `get_write_buffer_size()` counts the held bytes with the transport's own;
  * a write that would take the held and buffered bytes past the high-water mark is
    passed on at once with what is held, so the transport pauses its protocol
    (`pause_writing`) exactly when it would have, and a drain that follows sees it;
  * `close`, `abort` and `write_eof` pass on what is held first; once the transport is
    closing, writes go straight to it (as they did before).
"""

from __future__ import annotations

import asyncio
from typing import Any


class Coalesced(asyncio.Transport):
    """`transport` as its protocol's writes see it: the writes of one loop step go out
    as one `transport.write`; everything else is the transport's own."""

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__()
        self._transport = transport
        self._loop = loop
        self._held: list[bytes] = []
        self._held_size = 0
        self._high = transport.get_write_buffer_limits()[1]  # kept by set_write_buffer_limits

    @property
    def wrapped(self) -> asyncio.Transport:
        return self._transport

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if not data:
            return
        transport = self._transport
        if transport.is_closing():  # closed under this view: as the transport would
            self.flush()
            transport.write(data)
            return
        size = len(data)
        if self._held_size + size + transport.get_write_buffer_size() > self._high:
            self._held.append(bytes(data))
            self.flush()
            return
        if not self._held:
            self._loop.call_soon(self.flush)
        self._held.append(bytes(data))
        self._held_size += size

    def writelines(self, list_of_data: Any) -> None:
        for data in list_of_data:
            self.write(data)

    def flush(self) -> None:
        """Pass what is held to the transport, as one write."""
        held = self._held
        if not held:
            return
        self._held = []
        self._held_size = 0
        self._transport.write(held[0] if len(held) == 1 else b"".join(held))

    def get_write_buffer_size(self) -> int:
        return self._transport.get_write_buffer_size() + self._held_size

    def get_write_buffer_limits(self) -> tuple[int, int]:
        return self._transport.get_write_buffer_limits()

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        self._transport.set_write_buffer_limits(high, low)
        self._high = self._transport.get_write_buffer_limits()[1]

    def can_write_eof(self) -> bool:
        return self._transport.can_write_eof()

    def write_eof(self) -> None:
        self.flush()
        self._transport.write_eof()

    def close(self) -> None:
        self.flush()
        self._transport.close()

    def abort(self) -> None:
        self.flush()
        self._transport.abort()

    def is_closing(self) -> bool:
        return self._transport.is_closing()

    def pause_reading(self) -> None:
        self._transport.pause_reading()

    def resume_reading(self) -> None:
        self._transport.resume_reading()

    def is_reading(self) -> bool:
        return self._transport.is_reading()

    def set_protocol(self, protocol: asyncio.BaseProtocol) -> None:
        self._transport.set_protocol(protocol)

    def get_protocol(self) -> asyncio.BaseProtocol:
        return self._transport.get_protocol()

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return self._transport.get_extra_info(name, default)
