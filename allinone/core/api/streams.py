"""Server-sent event streams read from the session journal.

Contract: headers and a `: connected` comment are sent at once; then every journal event
after the starting sequence, in order, each as `event: <type>` + one `data:` line; no
`id:` or `retry:` lines ever; a `: keepalive` comment after 15 s of silence. Each
event carries random `obfuscation` padding unless the reader turned it off. Once the
session is deleted, the stream ends after its last journaled event. A reader
whose next event was pruned from the journal gets one `error` event
(`stream_interrupted`) and the stream closes; so does a reader whose key no longer opens
the session (`invalid_api_key`: the key was revoked or its project archived), checked
before each read (see `KeyWatch`). Events this process has just committed
are taken whole from the hub's memory when they follow on without a gap; everything
else is read from the journal.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import string
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from functools import partial
from typing import Any

from allinone.core.api.auth import Keys
from allinone.core.hub import Hub
from allinone.core.ids import Ids
from allinone.core.recorder import decode_event
from storage import journal
from storage.database import Database

KEEPALIVE_SECONDS = 15.0
READ_LIMIT = 256
SSE_HEADERS = {"cache-control": "no-cache", "x-accel-buffering": "no"}

# `obfuscation` padding: 1 to 64 random alphanumeric characters per event.
PADDING_LENGTHS = (1, 64)
_ALPHANUMERIC = string.ascii_letters + string.digits
# Byte value -> an alphanumeric character (62 of them; the first 8 are a little likelier,
# which matters nothing for padding whose only job is a random length).
PADDING_RANDOM_BYTES = PADDING_LENGTHS[1] + 1  # one length byte, then the characters
_TO_ALPHANUMERIC = bytes(ord(_ALPHANUMERIC[value % len(_ALPHANUMERIC)]) for value in range(256))

# Decides, per event, whether the stream ends after it: from the event's type and its
# journaled JSON, which a rule decodes only for the types it reads.
StopRule = Callable[[str, str], bool]

# The turn's own events, whose `turn_id` the creation stream's rule reads.
_TURN_ENDS = frozenset(
    (
        "agent.session.turn.completed",
        "agent.session.turn.failed",
        "agent.session.turn.cancelled",
    )
)


INTERRUPTED = (
    "stream_interrupted",
    "The event stream fell behind the retained journal; reconnect and read the session state.",
)
KEY_GONE = (
    "invalid_api_key",
    "The API key this stream was opened with was revoked, or its project archived.",
)
# How long a stream goes on the strength of its key's last check, unless a key or a
# project changed in this process (then at once): the bound for a revocation made
# through another Core process sharing the database.
KEY_RECHECK_SECONDS = 2.0


class KeyWatch:
    """Whether the project key a stream was opened with still opens it: read again when
    a key or a project changed in this process (`Hub.keys_changed`), else at most every
    `KEY_RECHECK_SECONDS` (so a stream of a few seconds reads nothing)."""

    def __init__(self, keys: Keys, hub: Hub, key: str) -> None:
        self._keys = keys
        self._hub = hub
        self._key = key
        self._checked = time.monotonic()
        self._generation = hub.key_generation

    async def __call__(self) -> bool:
        now = time.monotonic()
        fresh = now - self._checked < KEY_RECHECK_SECONDS
        if fresh and self._generation == self._hub.key_generation:
            return True
        self._checked, self._generation = now, self._hub.key_generation
        return await self._keys.project_key(self._key) is not None


def never(_type: str, _payload: str) -> bool:
    return False


class CreationStop:
    """The creation stream ends after the first settled idle, or on any failure; a
    creation without input ends right after `agent.session.created`. Only the turn's
    creation and its end are decoded (a stream of deltas is not)."""

    def __init__(self, expect_turn: bool = True) -> None:
        self.expect_turn = expect_turn
        self.turn_id: str | None = None
        self.turn_ended = False

    def __call__(self, type_: str, payload: str) -> bool:
        if type_ == "agent.session.failed":
            return True
        if type_ == "agent.session.created" and not self.expect_turn:
            return True
        if type_ == "agent.session.turn.created" and self.turn_id is None:
            self.turn_id = str(decode_event(payload).get("turn_id"))
        if type_ in _TURN_ENDS and decode_event(payload).get("turn_id") == self.turn_id:
            self.turn_ended = True
        return type_ == "agent.session.idle" and self.turn_ended


def padding(raw: bytes | None = None) -> str:
    """Random alphanumeric padding for an event's `obfuscation` field, of a random
    length, so an event's size says less about its content. Each byte picks a character
    (no read per character); `raw`, when given, is `PADDING_RANDOM_BYTES` bytes from the
    system's random source, so a chunk of events reads it once, not once per event."""
    if raw is None:
        raw = os.urandom(PADDING_RANDOM_BYTES)
    length = PADDING_LENGTHS[0] + raw[0] % (PADDING_LENGTHS[1] - PADDING_LENGTHS[0] + 1)
    return raw[1 : length + 1].translate(_TO_ALPHANUMERIC).decode("ascii")


def _padded(payload: str, raw: bytes) -> str:
    """`payload` (a journaled event: a JSON object) with an `obfuscation` field."""
    return f'{payload[:-1]},"obfuscation":"{padding(raw)}"}}'


async def journal_stream(
    db: Database,
    hub: Hub,
    ids: Ids,
    session_id: str,
    after_seq: int,
    stop: StopRule,
    obfuscation: bool = True,
    allowed: Callable[[], Awaitable[bool]] | None = None,
) -> AsyncIterator[bytes]:
    wake = hub.subscribe(session_id)
    try:
        yield b": connected\n\n"
        seq = after_seq
        while not hub.closing.is_set():
            if allowed is not None and not await allowed():
                yield _error(ids, session_id, "invalid_request_error", *KEY_GONE)
                return
            from_journal, wake.journal = wake.journal, False
            wake.clear()
            rows, deleted = ([] if from_journal else _remembered(hub, session_id, seq)), False
            if not rows:
                rows, deleted = await db.read_now(
                    partial(
                        journal.follow,
                        session_id=session_id,
                        seq=seq,
                        limit=READ_LIMIT,
                        recent=hub.recent,
                    )
                )
            if rows and rows[0]["seq"] != seq + 1:
                yield _error(ids, session_id, "server_error", *INTERRUPTED)
                return
            # The events of one read go out as one chunk: one send, not one per event.
            chunk, seq, stopped = _chunk(rows, seq, stop, obfuscation)
            if chunk:
                yield chunk
            if stopped:
                return
            if len(rows) == READ_LIMIT:
                continue  # more may be stored already
            if deleted:
                return  # everything the session journaled was sent; nothing more comes
            # A commit after `wake.clear()` sets `wake`; one before it is in `rows`.
            if wake.is_set():
                continue  # already woken: no timer
            waited = await _quietly(wake, allowed)
            if waited is _KEY_GONE:
                yield _error(ids, session_id, "invalid_request_error", *KEY_GONE)
                return
            if waited is _QUIET:
                yield b": keepalive\n\n"
    finally:
        hub.unsubscribe(session_id, wake)


_WOKEN, _QUIET, _KEY_GONE = object(), object(), object()


async def _quietly(wake: asyncio.Event, allowed: Callable[[], Awaitable[bool]] | None) -> object:
    """Wait for `wake` up to `KEEPALIVE_SECONDS`: `_WOKEN`, or `_QUIET` when a keepalive
    is due. A stream with a key to watch looks at it every `KEY_RECHECK_SECONDS` meanwhile
    (`_KEY_GONE` once it no longer opens the session), so a revocation made through
    another Core process ends a quiet stream within that bound too."""
    loop = asyncio.get_running_loop()
    until = loop.time() + KEEPALIVE_SECONDS
    while (left := until - loop.time()) > 0:
        step = left if allowed is None else min(left, KEY_RECHECK_SECONDS)
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(step):  # no task, unlike wait_for
                await wake.wait()
            return _WOKEN
        if allowed is not None and not await allowed():
            return _KEY_GONE
    return _QUIET


def _remembered(hub: Hub, session_id: str, seq: int) -> list[dict[str, Any]]:
    """The events after `seq` this process committed and still remembers, when they
    reach the latest it committed (with no gap); otherwise none, and the caller reads
    the journal."""
    rows = hub.recent.following(session_id, seq, READ_LIMIT)
    if rows and len(rows) < READ_LIMIT and rows[-1]["seq"] < hub.latest(session_id):
        return []
    return rows


def _chunk(
    rows: list[dict[str, Any]], seq: int, stop: StopRule, obfuscation: bool
) -> tuple[bytes, int, bool]:
    """The SSE text of `rows` up to the one the stop rule ends the stream after: (its
    bytes, the last sequence in it, whether the stream ends). The padding of the whole
    chunk is read from the system's random source at once."""
    lines: list[str] = []
    size = PADDING_RANDOM_BYTES
    random = os.urandom(size * len(rows)) if obfuscation and rows else b""
    for index, row in enumerate(rows):
        seq = row["seq"]
        payload: str = row["payload"]
        sent = _padded(payload, random[index * size : (index + 1) * size]) if random else payload
        lines.append(f"event: {row['type']}\ndata: {sent}\n\n")
        if stop(row["type"], payload):
            return "".join(lines).encode(), seq, True
    return "".join(lines).encode(), seq, False


def _error(ids: Ids, session_id: str, kind: str, code: str, message: str) -> bytes:
    """The `error` event that ends a stream (the SDK raises it as an `APIError`)."""
    import msgspec

    event = {
        "type": "error",
        "event_id": ids.new("evt"),
        "session_id": session_id,
        "error": {"type": kind, "code": code, "message": message, "param": None},
    }
    return b"event: error\ndata: " + msgspec.json.encode(event) + b"\n\n"
