"""Injectable clock and ID generation. IDs are prefixed and time-ordered."""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable


class Clock:
    """Wall-clock seconds and milliseconds; tests may pass another implementation."""

    def now(self) -> int:
        return int(time.time())

    def now_ms(self) -> int:
        return int(time.time() * 1000)


class Ids:
    """`prefix_` + 12 hex digits of milliseconds + 12 random hex digits: sortable by time."""

    def __init__(self, clock: Clock, token_hex: Callable[[int], str] = secrets.token_hex) -> None:
        self._clock = clock
        self._token_hex = token_hex
        self._last_ms = 0
        self._counter = 0

    def new(self, prefix: str) -> str:
        ms = self._clock.now_ms()
        if ms <= self._last_ms:
            self._counter += 1
            ms = self._last_ms
        else:
            self._counter = 0
            self._last_ms = ms
        return f"{prefix}_{ms:012x}{self._counter:04x}{self._token_hex(6)}"

    def secret(self, nbytes: int = 32) -> str:
        return self._token_hex(nbytes)
