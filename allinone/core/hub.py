"""Wake-ups for journal readers. A hint only: readers always read the journal itself.

The hub also carries the events the journal committed recently (`recent`), so that a
reader woken for them finds them whole instead of rebuilding them from their patches.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Callable

from storage.journal import Recent


class Hub:
    """Per-session condition that is notified after a commit appended events."""

    def __init__(self) -> None:
        self._waiters: dict[str, set[asyncio.Event]] = defaultdict(set)
        self.closing = asyncio.Event()
        self.recent = Recent()
        self._notify: Callable[[str], None] = self.notify_here

    def relay_through(self, notify: Callable[[str], None]) -> None:
        """From now on `notify` is `notify(session_id)`: it wakes this process's readers
        and those of the other Core processes sharing the database."""
        self._notify = notify

    def notify(self, session_id: str) -> None:
        self._notify(session_id)

    def notify_here(self, session_id: str) -> None:
        """Wake this process's readers of the session."""
        for event in self._waiters.get(session_id, ()):
            event.set()

    def subscribe(self, session_id: str) -> asyncio.Event:
        event = asyncio.Event()
        self._waiters[session_id].add(event)
        return event

    def unsubscribe(self, session_id: str, event: asyncio.Event) -> None:
        waiters = self._waiters.get(session_id)
        if waiters is not None:
            waiters.discard(event)
            if not waiters:
                del self._waiters[session_id]

    def close(self) -> None:
        """Wake every reader so open streams end during shutdown."""
        self.closing.set()
        for waiters in self._waiters.values():
            for event in waiters:
                event.set()
