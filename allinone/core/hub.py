"""Wake-ups for journal readers.

The hub also carries the events the journal committed recently (`recent`). A reader
woken only for events this process committed takes them from there, whole and in order,
without reading the journal; any other wake-up (a deletion, another process's events,
an event no longer remembered) has it read the journal itself.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Callable

from storage.journal import Recent


class Wake(asyncio.Event):
    """One reader's wake-up. `journal` says whether the reader must read the journal:
    True at first and after any notification that memory cannot answer (a deletion,
    another Core process's events); False while every event it was woken for is in
    the hub's `recent`, whole, in order."""

    def __init__(self) -> None:
        super().__init__()
        self.journal = True


class Hub:
    """Per-session condition that is notified after a commit appended events."""

    def __init__(self) -> None:
        self._waiters: dict[str, set[Wake]] = defaultdict(set)
        self.closing = asyncio.Event()
        self.recent = Recent()
        self._notify: Callable[[str], None] = self.notify_here
        # Set while `committed` notifies: this process's readers then read from memory.
        self._remembered = False
        # The latest sequence this process committed per session that has readers.
        self._latest: dict[str, int] = {}
        # Moves when a project key is revoked or a project archived here: each stream
        # then checks its key again before it reads on (`api.streams.KeyWatch`).
        self.key_generation = 0

    def relay_through(self, notify: Callable[[str], None]) -> None:
        """From now on `notify` is `notify(session_id)`: it wakes this process's readers
        and those of the other Core processes sharing the database."""
        self._notify = notify

    def notify(self, session_id: str) -> None:
        self._notify(session_id)

    def notify_here(self, session_id: str) -> None:
        """Wake this process's readers of the session; they read the journal, unless the
        wake-up is `committed`'s own."""
        journal = not self._remembered
        for event in self._waiters.get(session_id, ()):
            event.journal = event.journal or journal
            event.set()

    def committed(self, session_id: str, seq: int) -> None:
        """The event `seq` of the session, already put in `recent`, has committed: wake
        this process's readers, who may take it from `recent`; other processes' readers
        (through the relay) read the journal."""
        if session_id in self._waiters:
            self._latest[session_id] = max(seq, self._latest.get(session_id, 0))
        self._remembered = True
        try:
            self._notify(session_id)  # other processes' readers get it as a plain notify
        finally:
            self._remembered = False

    def latest(self, session_id: str) -> int:
        """The latest sequence of the session committed here while it had readers (0
        when none): memory that ends before it has a gap, which the journal fills."""
        return self._latest.get(session_id, 0)

    def keys_changed(self) -> None:
        """A key was revoked or a project archived: every reader checks its key again."""
        self.key_generation += 1
        for waiters in self._waiters.values():
            for event in waiters:
                event.set()

    def subscribe(self, session_id: str) -> Wake:
        event = Wake()
        self._waiters[session_id].add(event)
        return event

    def unsubscribe(self, session_id: str, event: Wake) -> None:
        waiters = self._waiters.get(session_id)
        if waiters is not None:
            waiters.discard(event)
            if not waiters:
                del self._waiters[session_id]
                self._latest.pop(session_id, None)

    def close(self) -> None:
        """Wake every reader so open streams end during shutdown."""
        self.closing.set()
        for waiters in self._waiters.values():
            for event in waiters:
                event.set()
