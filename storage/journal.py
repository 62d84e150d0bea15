"""The per-session event journal that SSE readers follow.

Events are appended inside the transaction that made the change they describe, with a
per-session sequence; a row names its session by the session's `journal_key` (a small
integer, migration 24). A row stores what changed, not the whole event: its `payload`
is a structural patch (`storage.deltas`) against a base named by `base_seq`, either an
earlier event of the same session (`> 0`) or a fixed template (`< 0`,
`storage.journal_templates`). A patch is stored deflated against a preset dictionary
(`storage.journal_dictionary`, a BLOB) when that is smaller, as text otherwise. Rows
written before the compact format have a NULL `base_seq` and hold the whole event.
Readers always get whole events, byte for byte what was appended.

Bounds that keep reading cheap and pruning safe: a base is at most `BASE_WINDOW`
events older than the row, and a chain of bases is at most `MAX_DEPTH` rows long, so a
row never depends on anything more than `REACH` events older than itself. The journal
keeps the newest `RETAINED_EVENTS` per session readable, plus `REACH` more as bases
(`storage.journal_prune` deletes the rest in bounded batches).
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from storage import deltas
from storage.database import Tx
from storage.journal_dictionary import pack, unpack
from storage.journal_templates import (
    FAMILIES,
    TEMPLATES,
    event_id_text,
    event_id_value,
    family,
    type_code,
    type_name,
)
from storage.rows import Queryable, dumps, loads

RETAINED_EVENTS = 4096
BASE_WINDOW = 64
MAX_DEPTH = 8
REACH = BASE_WINDOW * MAX_DEPTH
CACHED_SESSIONS = 1024
# Rows name their session by its `journal_key` (migration 24), found from its id.
_KEY = "(SELECT journal_key FROM sessions WHERE id = ?)"


@dataclass(frozen=True)
class _Base:
    seq: int
    event_id: str
    depth: int
    body: dict[str, Any]


class Bases:
    """The latest event body written per session and family, which new events are
    stored against. Only an optimisation: a miss stores the event against a template,
    and an entry is used only after checking that its row is still there."""

    def __init__(self, sessions: int = CACHED_SESSIONS) -> None:
        self._limit = sessions
        self._by_session: OrderedDict[str, dict[str | int, _Base]] = OrderedDict()

    def candidates(self, session_id: str, type_: str) -> list[_Base]:
        """The latest event of this type and the latest of every family, newest first."""
        known = self._by_session.get(session_id)
        if known is None:
            return []
        found = {b.seq: b for b in (known.get(k) for k in (type_, *FAMILIES)) if b is not None}
        return [found[seq] for seq in sorted(found, reverse=True)]

    def remember(self, session_id: str, type_: str, base: _Base) -> None:
        known = self._by_session.setdefault(session_id, {})
        self._by_session.move_to_end(session_id)
        for key in (type_, family(base.body)):
            current = known.get(key)
            if current is None or current.seq <= base.seq:
                known[key] = base
        while len(self._by_session) > self._limit:
            self._by_session.popitem(last=False)


async def append(
    tx: Tx, session_id: str, seq: int, event_id: str, type_: str, payload: str, now: int
) -> None:
    """Append one whole event (`payload` is its JSON) without a base."""
    await _insert(tx, (session_id, seq, event_id, type_, None, payload, now))


async def append_compact(
    tx: Tx,
    bases: Bases,
    session_id: str,
    seq: int,
    event: tuple[str, str, dict[str, Any]],
    now: int,
) -> None:
    """Append `event` = (event_id, type, body) stored as the smallest patch against its
    family's template or one of the session's latest events (one per family, committed
    or written earlier in this transaction). Readers get
    `{"event_id": ..., "type": ..., **body}`."""
    event_id, type_, body = event
    kind = family(body)
    base_seq, depth, encoded = -kind, 1, dumps(deltas.diff(TEMPLATES[kind], body))
    smaller: list[tuple[int, str, _Base]] = []
    for base in bases.candidates(session_id, type_):
        if 0 < seq - base.seq <= BASE_WINDOW and base.depth < MAX_DEPTH:
            candidate = dumps(deltas.diff(base.body, body))
            if len(candidate) < len(encoded):
                smaller.append((len(candidate), candidate, base))
    # Only the chosen base is checked against the table (one lookup, usually).
    for _, candidate, base in sorted(smaller, key=lambda option: option[0]):
        if await _still_stored(tx, session_id, base):
            base_seq, depth, encoded = base.seq, base.depth + 1, candidate
            break
    stored = (event_id_value(event_id), type_code(type_))
    await _insert(tx, (session_id, seq, *stored, base_seq, pack(encoded), now))
    # Remembered at once: a later event of this transaction may use it as its base. A
    # rollback removes the row, and `_still_stored` then finds it gone. A copy, because
    # the caller may go on changing its dictionaries.
    bases.remember(session_id, type_, _Base(seq, event_id, depth, loads(dumps(body))))


async def _still_stored(tx: Tx, session_id: str, base: _Base) -> bool:
    """Whether `base` is still the stored row it was (checked by event id)."""
    row = await tx.fetchone(
        f"SELECT event_id FROM session_events WHERE session_key = {_KEY} AND seq = ?",
        (session_id, base.seq),
    )
    return row is not None and event_id_text(row["event_id"]) == base.event_id


async def _insert(tx: Tx, values: tuple[Any, ...]) -> None:
    await tx.execute(
        "INSERT INTO session_events (session_key, seq, event_id, type, base_seq, payload,"
        f" created_at) VALUES ({_KEY}, ?, ?, ?, ?, ?, ?)",
        values,
    )


async def after(q: Queryable, session_id: str, seq: int, limit: int = 256) -> list[dict[str, Any]]:
    """Up to `limit` events after `seq`, in order: `seq`, `type` and the whole event's
    JSON as `payload`. Events that can no longer be rebuilt are left out as pruned, so
    the first event returned may be later than `seq + 1`."""
    rows = await q.fetchall(
        "SELECT seq, event_id, type, base_seq, payload FROM session_events"
        f" WHERE session_key = {_KEY} AND seq > ? ORDER BY seq LIMIT ?",
        (session_id, seq, limit),
    )
    reader = _Rebuilder(q, session_id)
    found: list[dict[str, Any]] = []
    for row in rows:
        payload: str = row["payload"]
        type_ = type_name(row["type"])
        if row["base_seq"] is not None:
            try:
                body = await reader.body(dict(row))
            except _MissingBase:
                # Kept only as a base for later rows, its own base pruned: to a reader
                # it is pruned too, like everything before it.
                found = []
                continue
            event_id = event_id_text(row["event_id"])
            payload = dumps({"event_id": event_id, "type": type_, **body})
        found.append({"seq": row["seq"], "type": type_, "payload": payload})
    return found


class _MissingBase(Exception):
    """A row's base is no longer stored (pruned)."""


class _Rebuilder:
    """Rebuilds event bodies from their patches, fetching bases a batch does not hold."""

    def __init__(self, q: Queryable, session_id: str) -> None:
        self._q = q
        self._session_id = session_id
        self._known: dict[int, dict[str, Any]] = {}

    async def body(self, row: dict[str, Any]) -> dict[str, Any]:
        base_seq = row["base_seq"]
        if base_seq is None:
            event: dict[str, Any] = loads(row["payload"])
            body = {k: v for k, v in event.items() if k not in ("event_id", "type")}
        else:
            patch = loads(unpack(row["payload"]))
            body = deltas.apply(await self._base(int(base_seq)), patch)
        self._known[int(row["seq"])] = body
        return body

    async def _base(self, seq: int) -> dict[str, Any]:
        if seq < 0:
            return TEMPLATES[-seq]
        if seq in self._known:
            return self._known[seq]
        row = await self._q.fetchone(
            f"SELECT seq, base_seq, payload FROM session_events WHERE session_key = {_KEY}"
            " AND seq = ?",
            (self._session_id, seq),
        )
        if row is None:
            raise _MissingBase(seq)
        return await self.body(dict(row))


async def latest_seq(q: Queryable, session_id: str) -> int:
    row = await q.fetchone("SELECT event_seq FROM sessions WHERE id = ?", (session_id,))
    return 0 if row is None else int(row["event_seq"])
