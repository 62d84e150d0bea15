"""Wake-ups that cross Core processes.

A signal is a topic and a key (`session`: a session's journal grew; `wake`: the turn
queue changed; `cancel`, `pause`, `input`: a running turn has something to act on). A
signal is a hint, never the data: whoever is woken reads the database itself, so a
signal lost or duplicated changes when a reader looks, never what it finds.

`Signals.relay(topic, handler)` gives the function the rest of Core calls after a
commit: it runs `handler(key)` in this process at once and hands the signal to the
`Channel`, which carries it to the other processes, whose `Signals` run their own
handler for the topic. `LocalChannel` carries nothing (one process: the embedded
default); `PostgresChannel` uses PostgreSQL's `LISTEN`/`NOTIFY` on one connection of its
own for listening and one for sending.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from allinone.core.tasks import cancel_and_wait

log = logging.getLogger(__name__)

CHANNEL = "corebox_signals"
TOPICS = ("session", "wake", "cancel", "pause", "input")
MAX_KEY_LENGTH = 200
RECONNECT_SECONDS = 1.0

Handler = Callable[[str], None]


class Channel(Protocol):
    """Carries signals between processes; `start` is given what to call with each
    payload another process sent."""

    def send(self, payload: str) -> None: ...

    async def start(self, received: Handler) -> None: ...

    async def close(self) -> None: ...


class LocalChannel:
    """One process: nothing to carry."""

    def send(self, payload: str) -> None:
        return None

    async def start(self, received: Handler) -> None:
        return None

    async def close(self) -> None:
        return None


class Signals:
    def __init__(self, process_id: str, channel: Channel | None = None) -> None:
        self._process_id = process_id
        self._channel: Channel = channel or LocalChannel()
        self._handlers: dict[str, Handler] = {}
        self.received = 0

    def relay(self, topic: str, handler: Handler) -> Handler:
        """Register `handler` for `topic`; return what to call to signal it everywhere."""
        if topic not in TOPICS:
            raise ValueError(f"unknown signal topic {topic!r}")
        self._handlers[topic] = handler

        def signal(key: str) -> None:
            handler(key)
            if len(key) <= MAX_KEY_LENGTH:
                self._channel.send(f"{self._process_id} {topic} {key}")

        return signal

    async def start(self) -> None:
        await self._channel.start(self._deliver)

    async def close(self) -> None:
        await self._channel.close()

    def _deliver(self, payload: str) -> None:
        sender, _, rest = payload.partition(" ")
        topic, _, key = rest.partition(" ")
        if sender == self._process_id:
            return  # already handled here when it was sent
        handler = self._handlers.get(topic)
        if handler is None:
            return
        self.received += 1
        try:
            handler(key)
        except Exception:
            log.exception("signal handler for %s failed", topic)


class PostgresChannel:
    """`LISTEN`/`NOTIFY` on the database the processes share. Sends are queued and
    written in order by one task; duplicates waiting in the queue are sent once. A
    connection that fails is reopened after a pause (meanwhile readers still wake on
    their own timers)."""

    def __init__(self, url: str) -> None:
        self._url = url
        self._outbox: asyncio.Queue[str] = asyncio.Queue()
        self._tasks: list[asyncio.Task[None]] = []
        self.listening = asyncio.Event()

    def send(self, payload: str) -> None:
        self._outbox.put_nowait(payload)

    async def start(self, received: Handler) -> None:
        self._tasks = [
            asyncio.create_task(self._listen(received), name="signals-listen"),
            asyncio.create_task(self._send_all(), name="signals-send"),
        ]
        # Signals sent from now on reach this process's peers' listeners once they are
        # subscribed; wait for this one's own subscription so nothing sent after start
        # returns is missed here.
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.listening.wait(), 10.0)

    async def close(self) -> None:
        for task in self._tasks:
            await cancel_and_wait(task)
        self._tasks = []

    async def _listen(self, received: Handler) -> None:
        import psycopg  # loaded by Core processes sharing a PostgreSQL database only

        while True:
            try:
                async with await psycopg.AsyncConnection.connect(
                    self._url, autocommit=True
                ) as conn:
                    await conn.execute(f"LISTEN {CHANNEL}")
                    self.listening.set()
                    async for notify in conn.notifies():
                        received(notify.payload)
            except psycopg.Error as exc:
                self.listening.clear()
                log.warning("signal listener lost its connection: %s", type(exc).__name__)
            await asyncio.sleep(RECONNECT_SECONDS)

    async def _send_all(self) -> None:
        import psycopg  # loaded by Core processes sharing a PostgreSQL database only

        while True:
            try:
                async with await psycopg.AsyncConnection.connect(
                    self._url, autocommit=True
                ) as conn:
                    while True:
                        batch = [await self._outbox.get()]
                        while not self._outbox.empty():
                            batch.append(self._outbox.get_nowait())
                        for payload in dict.fromkeys(batch):
                            await conn.execute("SELECT pg_notify(%s, %s)", (CHANNEL, payload))
            except psycopg.Error as exc:
                log.warning("signal sender lost its connection: %s", type(exc).__name__)
            await asyncio.sleep(RECONNECT_SECONDS)


@dataclass(frozen=True)
class TurnSignals:
    """The turn queue's signals as the rest of Core calls them, each relayed to every
    process (the one running the turn acts on it; the others find nothing to do)."""

    wake: Callable[[], None]
    cancel: Callable[[str], None]
    pause: Callable[[str], None]
    input: Callable[[str], None]


def relay_turns(
    signals: Signals,
    wake: Callable[[], None],
    cancel: Handler,
    pause: Handler,
    input_admitted: Handler,
) -> TurnSignals:
    woken = signals.relay("wake", lambda _key: wake())
    return TurnSignals(
        wake=lambda: woken(""),
        cancel=signals.relay("cancel", cancel),
        pause=signals.relay("pause", pause),
        input=signals.relay("input", input_admitted),
    )
