"""Refused device credentials, logged for the owner: a daemon knocking with a revoked or
wrong credential is seen in Core's log without the log filling up.

A refusal is a warning at most once per source address per window; the next line from
that address says how many were refused meanwhile. The answer to the caller is not
changed (it stays the one 401 for an unknown device, a revoked one and a wrong
credential), the credential is never logged, and the device id the caller named is
logged as its quoted repr, cut short, since anyone can send one.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

log = logging.getLogger(__name__)

REFUSAL_LOG_WINDOW_SECONDS = 60.0
# The addresses remembered at once; past this, those whose window has passed are
# forgotten, then the oldest.
MAX_ADDRESSES = 1024
DEVICE_ID_LOGGED_CHARS = 64


class RefusalLog:
    def __init__(
        self,
        window: float = REFUSAL_LOG_WINDOW_SECONDS,
        clock: Callable[[], float] = time.monotonic,
        capacity: int = MAX_ADDRESSES,
    ) -> None:
        self._window = window
        self._clock = clock
        self._capacity = capacity
        # address -> (when its last warning was logged, refusals since, not logged)
        self._addresses: dict[str, tuple[float, int]] = {}

    def refused(self, address: str, device_id: str, what: str) -> None:
        """Note one refused `what` (bootstrap, connection) from `address` for the device
        id it named; log a warning unless one was logged for `address` within the
        window."""
        now = self._clock()
        last = self._addresses.get(address)
        if last is not None and now - last[0] < self._window:
            self._addresses[address] = (last[0], last[1] + 1)
            return
        since = "" if not last or not last[1] else f" ({last[1]} more refused since the last line)"
        self._addresses.pop(address, None)
        self._make_room(now)
        self._addresses[address] = (now, 0)
        log.warning(
            "runtime %s from %s refused for device %r: no device has that id and credential "
            "(unknown or revoked device, or a wrong credential)%s",
            what,
            address,
            device_id[:DEVICE_ID_LOGGED_CHARS],
            since,
        )

    def _make_room(self, now: float) -> None:
        if len(self._addresses) < self._capacity:
            return
        for address, (logged, _) in list(self._addresses.items()):
            if now - logged >= self._window:
                del self._addresses[address]
        while len(self._addresses) >= self._capacity:
            del self._addresses[next(iter(self._addresses))]
