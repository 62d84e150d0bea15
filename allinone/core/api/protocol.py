"""The HTTP/1.1 connection protocol the server runs: uvicorn's h11 protocol with a
deadline for request headers (`h11_protocol`, imported only where it runs) and
`fast_protocol`, the same bounds on uvicorn's httptools protocol, which `http_protocol`
prefers where httptools is installed.

uvicorn bounds the idle time between requests (`timeout_keep_alive`) but not the time a
client may take to send a request's headers: a client trickling one header byte at a
time would hold its connection open forever. Here a connection must deliver a complete
request head within `HEADER_SECONDS` of opening, and again of each response completing;
otherwise it is closed. Body reads are bounded by `bodies.BodyDeadline`, header size by
h11's `max_incomplete_event_size`.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

HEADER_SECONDS = 10.0
MAX_HEADER_BYTES = 16 * 1024
INVALID_REQUEST = "Invalid HTTP request received."  # uvicorn's own 400 body


def http_protocol() -> type[asyncio.Protocol]:
    """The protocol class the server runs: httptools' (a C parser) where it is installed,
    h11's otherwise; both bounded alike."""
    try:
        from allinone.core.api.fast_protocol import BoundedHttpToolsProtocol
    except ImportError:  # httptools does not install everywhere
        from allinone.core.api.h11_protocol import BoundedH11Protocol

        return BoundedH11Protocol
    return BoundedHttpToolsProtocol


def __getattr__(name: str) -> Any:
    """`BoundedH11Protocol` lives in `h11_protocol`, imported (with h11) when asked for:
    the server runs the httptools protocol where httptools is installed."""
    if name == "BoundedH11Protocol":
        from allinone.core.api.h11_protocol import BoundedH11Protocol

        return BoundedH11Protocol
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class HeadDeadline:
    """The head deadline both protocols share: armed when a connection opens and when a
    response completes, it closes the connection unless a request head has completed
    since. `_head_mark` names the head being waited for (a new one changes it)."""

    header_seconds = HEADER_SECONDS
    _header_deadline: asyncio.TimerHandle | None = None
    if TYPE_CHECKING:
        transport: asyncio.Transport
        loop: asyncio.AbstractEventLoop
        logger: logging.Logger

        def _head_mark(self) -> object: ...

    def _arm_header_deadline(self) -> None:
        self._disarm_header_deadline()
        if self.transport.is_closing():
            return
        self._header_deadline = self.loop.call_later(
            self.header_seconds, self._header_deadline_passed, self._head_mark()
        )

    def _disarm_header_deadline(self) -> None:
        if self._header_deadline is not None:
            self._header_deadline.cancel()
            self._header_deadline = None

    def _header_deadline_passed(self, waiting_for: object) -> None:
        self._header_deadline = None
        if self._head_mark() is waiting_for and not self.transport.is_closing():
            self.logger.info("closing a connection that sent no request head in time")
            self.transport.close()
