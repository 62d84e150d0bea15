"""Injectable clock and ID generation. IDs are prefixed and time-ordered."""

from __future__ import annotations

import os
import secrets
import threading
import time
from collections.abc import Callable


class Clock:
    """Wall-clock seconds and milliseconds; tests may pass another implementation."""

    def now(self) -> int:
        return int(time.time())

    def now_ms(self) -> int:
        return int(time.time() * 1000)


class RandomHex:
    """Random hex digits from the system's random source, read a block at a time: one
    read per `BLOCK` bytes instead of one per ID. For identifiers, never for secrets
    (a secret is read from `secrets` when it is made). Safe across threads."""

    BLOCK = 4096

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._block = b""
        self._used = 0

    def __call__(self, nbytes: int) -> str:
        with self._lock:
            if self._used + nbytes > len(self._block):
                self._block, self._used = os.urandom(max(self.BLOCK, nbytes)), 0
            start, self._used = self._used, self._used + nbytes
            return self._block[start : self._used].hex()


class Ids:
    """`prefix_` + 12 hex digits of milliseconds + 12 random hex digits: sortable by time.
    IDs take their random digits from a `RandomHex` unless `token_hex` is given (which
    then also makes secrets)."""

    def __init__(self, clock: Clock, token_hex: Callable[[int], str] | None = None) -> None:
        self._clock = clock
        self._token_hex = token_hex or RandomHex()
        self._secret_hex = token_hex or secrets.token_hex
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
        return self._secret_hex(nbytes)
