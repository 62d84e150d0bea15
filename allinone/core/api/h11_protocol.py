"""uvicorn's h11 protocol with `protocol.HeadDeadline`: the server's protocol where
httptools is not installed. A module of its own so that h11 is imported only there."""

from __future__ import annotations

import asyncio

from uvicorn.protocols.http.h11_impl import H11Protocol

from allinone.core.api.protocol import HeadDeadline


class BoundedH11Protocol(HeadDeadline, H11Protocol):
    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm_header_deadline()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm_header_deadline()
        super().connection_lost(exc)

    def on_response_complete(self) -> None:
        # Armed first: a pipelined request parsed by the call below replaces the scope
        # and so disarms the deadline.
        self._arm_header_deadline()
        super().on_response_complete()

    def _head_mark(self) -> object:
        return self.scope  # a new request head replaces the scope
