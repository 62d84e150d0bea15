"""Connected devices. A new connection for a device replaces the old one: the old
connection's runs and routes are closed and nothing is inherited. A device Core asked
to shut down (`device_shutdown`) is never selected again on that connection."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterator

from allinone.core.gateway.connection import (
    CLOSE_RETIRED,
    CONNECTION_REPLACED,
    DEVICE_REVOKED,
    Connection,
    SendFailed,
)
from runtime.proto.capabilities import missing_capabilities
from runtime.proto.device import DeviceShutdown

log = logging.getLogger(__name__)


class Registry:
    def __init__(self) -> None:
        self._connections: dict[str, Connection] = {}
        self.changed = asyncio.Event()
        self._listeners: list[Callable[[], None]] = []
        self._selections = -1

    def listen(self, listener: Callable[[], None]) -> None:
        """Call `listener` (synchronously, on the event loop) at every change `changed`
        announces: a waiter that needs no task of its own to watch the event."""
        self._listeners.append(listener)

    def register(self, connection: Connection) -> None:
        previous = self._connections.get(connection.device_id)
        if previous is not None and not previous.closed.is_set():
            # Two daemons holding the same credential replace each other: say so once
            # per replacement; the old one is closed with reason `connection_replaced`.
            log.warning(
                "runtime device %s: a new connection replaced the open one", connection.device_id
            )
            previous.close(CONNECTION_REPLACED)
        self._connections[connection.device_id] = connection
        self._changed()

    def unregister(self, connection: Connection) -> None:
        if self._connections.get(connection.device_id) is connection:
            del self._connections[connection.device_id]
        self._changed()

    def revoke(self, device_id: str) -> bool:
        """The device's credential was revoked: close its live connection with 4001 so
        its Runtime stops reconnecting. Returns whether a connection was open."""
        connection = self._connections.get(device_id)
        if connection is None or connection.closed.is_set():
            return False
        connection.close(DEVICE_REVOKED, CLOSE_RETIRED)
        return True

    async def shut_down(self, device_id: str, reason: str) -> bool:
        """Ask the device's Runtime to stop (`device_shutdown`, seed 000). From now on
        nothing new is claimed to its connection; the Runtime then settles its work and
        closes the connection, and what was in flight ends as a lost connection does
        (its outcome unknown, nothing fabricated). Returns whether a connection was
        open to ask."""
        connection = self._connections.get(device_id)
        if connection is None or connection.closed.is_set():
            return False
        connection.shutting_down = True
        self._changed()
        try:
            await connection.send("device_shutdown", "", DeviceShutdown(reason=reason))
        except SendFailed:
            return False
        return True

    def declared(self) -> None:
        """A connection's capability snapshot changed."""
        self._changed()

    def __iter__(self) -> Iterator[Connection]:
        return iter(list(self._connections.values()))

    def offers(self, kind: str) -> bool:
        """Whether a connected device's latest declaration has `kind` available."""
        return any(
            not connection.closed.is_set() and connection.available_kind(kind) is not None
            for connection in self
        )

    def select(self, kind: str, required: list[str]) -> Connection | None:
        """A connected device that declared `kind` available with every required
        capability; successive selections take the devices that qualify in turn, so
        several Runtimes share the work."""
        fit = []
        for connection in self:
            if connection.closed.is_set() or connection.shutting_down:
                continue
            declared = connection.available_kind(kind)
            if declared is None:
                continue
            if not missing_capabilities(declared.capabilities, required):
                fit.append(connection)
        if not fit:
            return None
        self._selections += 1
        return fit[self._selections % len(fit)]

    def _changed(self) -> None:
        self.changed.set()
        self.changed = asyncio.Event()
        for listener in self._listeners:
            listener()
