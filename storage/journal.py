"""The per-session event journal that SSE readers follow.

Events are appended inside the transaction that made the change they describe, with a
per-session sequence; the rows a job appends are stored together when it ends, in as few
statements as they can be. A row names its session by the session's `journal_key` (a
small integer, migration 24). A row stores what changed, not the whole event: its `payload`
is a structural patch (`storage.deltas`) against a base named by `base_seq`, either an
earlier event of the same session (`> 0`) or a fixed template (`< 0`,
`storage.journal_templates`). A row keeps no time of its own (an event's times are in
its body). A patch is stored deflated against a preset dictionary
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

import threading
from collections import OrderedDict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import partial
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
# A patch this short against the latest event of the same type is stored without
# working out the others (`_patches`).
SHORT_PATCH = 48
CACHED_SESSIONS = 1024
RECENT_EVENTS = 2048
# Rows name their session by its `journal_key` (migration 24), found from its id.
_KEY = "(SELECT journal_key FROM sessions WHERE id = ?)"
# The key under which a job keeps each session's `journal_key` (`Tx.memo`).
_KEYS = "journal_key"
# The keys under which a job keeps the rows it appends, stored together when it ends,
# and the bases it remembered (by `id`), marked committed after it (`Tx.memo`).
_PENDING = "journal_pending"
_WRITTEN = "journal_written"
# Rows stored by one statement at most; a job's rows go in statements of exactly as many
# rows as it has up to this, so each row count is one cached statement text.
_ROWS_PER_STATEMENT = 16
_COLUMNS = "INSERT INTO session_events (session_key, seq, event_id, type, base_seq, payload)"
# A committed event as `Recent.put_many` takes it: (seq, event_id, payload, body, type).
Committed = tuple[int, str, str, dict[str, Any], str | None]


@dataclass
class _Base:
    seq: int
    # The event's id as its column holds it (`event_id_value`).
    stored_id: str | bytes
    depth: int
    body: dict[str, Any]
    # Set once the job that wrote the row has committed: from then on the row is there
    # for as long as a later row may use it as a base (rows are never changed, pruning
    # keeps `REACH` rows past the retained ones, and a purge takes the session with them).
    committed: bool = False


class Bases:
    """The latest event body written per session and family, which new events are
    stored against. Only an optimisation: a miss stores the event against a template,
    and an entry is used only when its row is sure to be there (written by the same job,
    or by one that committed) or the insert checks that it is."""

    def __init__(self, sessions: int = CACHED_SESSIONS) -> None:
        self._limit = sessions
        self._by_session: OrderedDict[str, dict[str | int, _Base]] = OrderedDict()

    def candidates(self, session_id: str, type_: str) -> list[_Base]:
        """The latest event of this type and the latest of every family, newest first."""
        known = self._by_session.get(session_id)
        if known is None:
            return []
        found: dict[int, _Base] = {}
        for key in (type_, *FAMILIES):
            base = known.get(key)
            if base is not None:
                found[base.seq] = base
        return [found[seq] for seq in sorted(found, reverse=True)]

    def latest(self, session_id: str, type_: str) -> _Base | None:
        """The latest event of this type, if known."""
        known = self._by_session.get(session_id)
        return None if known is None else known.get(type_)

    def remember(self, session_id: str, type_: str, kind: int, base: _Base) -> None:
        """Keep `base`, an event of type `type_` and family `kind`."""
        known = self._by_session.setdefault(session_id, {})
        self._by_session.move_to_end(session_id)
        for key in (type_, kind):
            current = known.get(key)
            if current is None or current.seq <= base.seq:
                known[key] = base
        while len(self._by_session) > self._limit:
            self._by_session.popitem(last=False)


class Recent:
    """Whole events recently committed or rebuilt, so that readers need not rebuild them
    from their patches. Only an optimisation: an entry is used only for the row whose
    session, sequence and event id it names (event ids are unique, so such a row holds
    exactly that event), or, by `following`, as the committed event at its sequence
    (entries are only ever made of committed rows, and a session's sequences are never
    reused). Safe across reader threads."""

    def __init__(self, limit: int = RECENT_EVENTS) -> None:
        self._limit = limit
        self._lock = threading.Lock()
        self._events: OrderedDict[tuple[str, int], _Remembered] = OrderedDict()

    def put(
        self,
        session_id: str,
        seq: int,
        event_id: str,
        payload: str,
        body: dict[str, Any],
        type_: str | None = None,
    ) -> None:
        """Remember a committed event: its whole JSON and its body (never changed later),
        and its type when known (which `following` needs)."""
        self.put_many(session_id, ((seq, event_id, payload, body, type_),))

    def put_many(self, session_id: str, events: Iterable[Committed]) -> None:
        """`put` each of `events`, (seq, event_id, payload, body, type), in order, under
        one hold of the lock."""
        with self._lock:
            for seq, event_id, payload, body, type_ in events:
                self._events[(session_id, seq)] = _Remembered(event_id, payload, body, type_)
                self._events.move_to_end((session_id, seq))
            while len(self._events) > self._limit:
                self._events.popitem(last=False)

    def get(self, session_id: str, seq: int, event_id: str) -> tuple[str, dict[str, Any]] | None:
        """The whole event's JSON and body, if the row `(session_id, seq)` holding
        `event_id` is remembered."""
        with self._lock:
            found = self._events.get((session_id, seq))
        if found is None or found.event_id != event_id:
            return None
        return found.payload, found.body

    def following(self, session_id: str, seq: int, limit: int) -> list[dict[str, Any]]:
        """Up to `limit` remembered events of the session right after `seq`, in order and
        without a gap, shaped as `after` returns them; stops at the first one missing."""
        found: list[dict[str, Any]] = []
        with self._lock:
            while len(found) < limit:
                entry = self._events.get((session_id, seq + 1))
                if entry is None or entry.type_ is None:
                    break
                seq += 1
                found.append({"seq": seq, "type": entry.type_, "payload": entry.payload})
        return found


@dataclass(frozen=True, slots=True)
class _Remembered:
    event_id: str
    payload: str
    body: dict[str, Any]
    type_: str | None


def whole(event_id: str, type_: str, body: dict[str, Any], text: str | None = None) -> str:
    """The whole event's JSON, as readers get it. `text`, when given, is `dumps(body)`
    already made: it is spliced in after the id and type instead of encoded again (the
    same bytes, as a JSON object's members are encoded in order)."""
    if text is None or "event_id" in body or "type" in body:
        return dumps({"event_id": event_id, "type": type_, **body})
    head = f'{{"event_id":{dumps(event_id)},"type":{dumps(type_)}'
    return f"{head}}}" if text == "{}" else f"{head},{text[1:]}"


async def append(
    tx: Tx, session_id: str, seq: int, event_id: str, type_: str, payload: str
) -> None:
    """Append one whole event (`payload` is its JSON) without a base."""
    await _insert(tx, await _session_key(tx, session_id), (seq, event_id, type_, None, payload))


async def append_compact(
    tx: Tx,
    bases: Bases,
    session_id: str,
    seq: int,
    event: tuple[str, str, dict[str, Any]],
) -> tuple[dict[str, Any], str]:
    """Append `event` = (event_id, type, body) stored as a patch against its family's
    template or one of the session's latest events (one per type and family, committed
    or written earlier in this transaction): the smallest, or a short one against the
    latest event of its type when there is one (`_patches`). Readers get
    `{"event_id": ..., "type": ..., **body}`. Returns a copy of `body` the caller may
    keep (never changed later) and the whole event's JSON (`whole`)."""
    event_id, type_, body = event
    kind = family(body)
    stored = (event_id_value(event_id), type_code(type_))
    key = await _session_key(tx, session_id)
    depth = 1
    # A patch against a template, against a row this job appended, or against a row
    # whose job committed, is kept to be stored with the job's other rows when it ends
    # (`_store_pending`): its base is sure to be there. Against a row not known to be
    # committed (its job may have rolled back, or may still be committing), it is written
    # at once, on condition that its base is still the stored row it was (checked by event
    # id in the same statement); usually the first one is.
    for patch, base in _patches(bases, session_id, seq, (type_, kind), body):
        if key is None:  # no such session: the insert refuses it, as the caller expects
            await _insert(tx, key, (seq, *stored, -kind, pack(patch)))
            break
        if base is None or base.committed or _own(tx, base):
            base_seq = -kind if base is None else base.seq
            _add_pending(tx, (key, seq, *stored, base_seq, pack(patch)))
            depth = 1 if base is None else base.depth + 1
            break
        if await _insert_on_base(tx, (key, seq, *stored, base.seq, pack(patch)), base):
            depth = base.depth + 1
            break
    # Remembered at once: a later event of this transaction may use it as its base. A
    # rollback removes the row, and `_insert_on_base` then finds it gone. A copy, because
    # the caller may go on changing its dictionaries.
    text = dumps(body)
    copy: dict[str, Any] = loads(text)
    remembered = _Base(seq, stored[0], depth, copy)
    bases.remember(session_id, type_, kind, remembered)
    _mark_on_commit(tx, remembered)
    return copy, whole(event_id, type_, copy, text)


def _patches(
    bases: Bases, session_id: str, seq: int, kinds: tuple[str, int], body: dict[str, Any]
) -> Iterator[tuple[str, _Base | None]]:
    """The patches `body` may be stored as, made as they are asked for, in the order they
    are tried: the smallest first and the template's last (`None` for its base), which is
    always storable. A base's patch no smaller than one made before it is not offered. A
    patch of at most `SHORT_PATCH` characters against the session's latest event of the
    same type is tried before any other is worked out: in a stream of text deltas nearly
    every event has one, and no other could save more than that. `kinds` is the event's
    type and family."""
    type_, kind = kinds
    latest = bases.latest(session_id, type_)
    # By base sequence: the patch already worked out against it, or None once refused.
    worked: dict[int, str | None] = {}
    if latest is not None and _usable(latest, seq):
        patch = worked[latest.seq] = dumps(deltas.diff(latest.body, body))
        if len(patch) <= SHORT_PATCH:
            yield patch, latest
            worked[latest.seq] = None  # asked for more: its row was not the one it was
    template = dumps(deltas.diff(TEMPLATES[kind], body))
    # Each patch worked out is the smallest yet; a base whose floor shows that its patch
    # could not be smaller than the best yet is not worked out at all.
    smaller: list[tuple[str, _Base]] = []
    best = len(template)
    sizes: dict[str, int] = {}
    for base in bases.candidates(session_id, type_):
        if not _usable(base, seq) or (base.seq in worked and worked[base.seq] is None):
            continue  # out of bounds, or already refused
        if _floor(body, base.body, sizes) >= best:
            continue  # its patch cannot be the smallest: not worked out
        patch = worked.get(base.seq) or dumps(deltas.diff(base.body, body))
        if len(patch) < best:
            smaller.append((patch, base))
            best = len(patch)
    yield from reversed(smaller)
    yield template, None


def _usable(base: _Base, seq: int) -> bool:
    """Whether an event at `seq` may be stored against `base` (see the module's bounds)."""
    return 0 < seq - base.seq <= BASE_WINDOW and base.depth < MAX_DEPTH


def _floor(body: dict[str, Any], base: dict[str, Any], sizes: dict[str, int]) -> int:
    """A length the patch from `base` to `body` is longer than: each of `body`'s keys
    that `base` lacks is in it whole (`[value]`). `sizes` keeps each value's JSON length
    for the other bases of the same event."""
    floor = 0
    for key in body.keys() - base.keys():
        size = sizes.get(key)
        if size is None:
            size = sizes[key] = len(dumps(body[key]))
        floor += size
    return floor


def _mark_on_commit(tx: Tx, base: _Base) -> None:
    """Keep `base` as one this job remembered, and mark it committed once the job's
    transaction commits (never, if it does not)."""
    written: dict[int, _Base] | None = tx.memo.get(_WRITTEN)
    if written is None:
        written = tx.memo[_WRITTEN] = {}
        tx.after_commit(partial(_mark_committed, written))
    written[id(base)] = base


def _mark_committed(written: dict[int, _Base]) -> None:
    for base in written.values():
        base.committed = True


def _own(tx: Tx, base: _Base) -> bool:
    """Whether `base` is an entry this job remembered, so its row is this job's: one a
    rolled-back job remembered at the same sequence is another entry."""
    return id(base) in tx.memo.get(_WRITTEN, {})


def _add_pending(tx: Tx, row: tuple[Any, ...]) -> None:
    """Keep `row` to be stored when the job ends."""
    pending: list[tuple[Any, ...]] | None = tx.memo.get(_PENDING)
    if pending is None:
        pending = tx.memo[_PENDING] = []
        tx.before_end(_PENDING, partial(_store_pending, tx))
    pending.append(row)


async def _store_pending(tx: Tx) -> None:
    """Store the rows the job kept, in as few statements as `_ROWS_PER_STATEMENT` allows."""
    pending: list[tuple[Any, ...]] = tx.memo.pop(_PENDING)
    for start in range(0, len(pending), _ROWS_PER_STATEMENT):
        rows = pending[start : start + _ROWS_PER_STATEMENT]
        await tx.execute(
            f"{_COLUMNS} VALUES {', '.join(['(?, ?, ?, ?, ?, ?)'] * len(rows))}",
            [value for row in rows for value in row],
        )


async def _insert_on_base(tx: Tx, values: tuple[Any, ...], base: _Base) -> bool:
    """Insert the row `values` (its session named by journal key) only if `base` is
    still the stored row it was (same sequence and event id); return whether it was
    inserted."""
    inserted = await tx.execute(
        f"{_COLUMNS} SELECT ?, ?, ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM"
        " session_events WHERE session_key = ? AND seq = ? AND event_id = ?)",
        (*values, values[0], base.seq, _stored_event_id(tx, base.stored_id)),
    )
    return inserted == 1


def _stored_event_id(tx: Tx, value: str | bytes) -> str | bytes:
    """An event id's stored value (`event_id_value`) as the column compares: its bytes
    on SQLite, bytea's hex text on PostgreSQL (where the column is text)."""
    if isinstance(value, bytes) and tx.backend == "postgresql":
        return "\\x" + value.hex()
    return value


async def _insert(tx: Tx, key: int | None, values: tuple[Any, ...]) -> None:
    """Insert one row of the session whose journal key is `key` (None, no such session:
    the insert is refused)."""
    await tx.execute(f"{_COLUMNS} VALUES (?, ?, ?, ?, ?, ?)", (key, *values))


def note_session_key(tx: Tx, session_id: str, key: int) -> None:
    """Tell the job's later appends the session's `journal_key`, read by one of its own
    statements (a session's key never changes while its row exists)."""
    tx.memo[(_KEYS, session_id)] = key


async def _session_key(tx: Tx, session_id: str) -> int | None:
    """The session's `journal_key` (None when there is no such session, which the
    insert then refuses): read once per job."""
    key: int | None = tx.memo.get((_KEYS, session_id))
    if key is None:
        row = await tx.fetchone("SELECT journal_key FROM sessions WHERE id = ?", (session_id,))
        if row is None or row["journal_key"] is None:
            return None
        key = int(row["journal_key"])
        note_session_key(tx, session_id, key)
    return key


async def after(
    q: Queryable, session_id: str, seq: int, limit: int = 256, recent: Recent | None = None
) -> list[dict[str, Any]]:
    """Up to `limit` events after `seq`, in order: `seq`, `type` and the whole event's
    JSON as `payload`. Events that can no longer be rebuilt are left out as pruned, so
    the first event returned may be later than `seq + 1`. With `recent`, events it
    remembers are not rebuilt, and those rebuilt are remembered."""
    rows = await q.fetchall(
        "SELECT seq, event_id, type, base_seq, payload FROM session_events"
        f" WHERE session_key = {_KEY} AND seq > ? ORDER BY seq LIMIT ?",
        (session_id, seq, limit),
    )
    return await _events(q, session_id, rows, recent)


async def follow(
    q: Queryable, session_id: str, seq: int, limit: int = 256, recent: Recent | None = None
) -> tuple[list[dict[str, Any]], bool]:
    """`after(...)`, and whether the session is gone or marked deleted, read by one
    statement (so as of one snapshot: no event journaled before a deletion is missed)."""
    rows = await q.fetchall(
        "SELECT s.deleted_at, e.seq, e.event_id, e.type, e.base_seq, e.payload"
        " FROM sessions s LEFT JOIN session_events e"
        " ON e.session_key = s.journal_key AND e.seq > ?"
        " WHERE s.id = ? ORDER BY e.seq LIMIT ?",
        (seq, session_id, limit),
    )
    if not rows:
        return [], True
    deleted = rows[0]["deleted_at"] is not None
    found = [row for row in rows if row["seq"] is not None]  # none: a LEFT JOIN's null row
    return await _events(q, session_id, found, recent), deleted


async def _events(
    q: Queryable, session_id: str, rows: list[Any], recent: Recent | None
) -> list[dict[str, Any]]:
    """The whole events of journal rows read in order (see `after`)."""
    reader = _Rebuilder(q, session_id)
    found: list[dict[str, Any]] = []
    for row in rows:
        payload: str = row["payload"]
        type_ = type_name(row["type"])
        if row["base_seq"] is not None:
            event_id = event_id_text(row["event_id"])
            known = None if recent is None else recent.get(session_id, row["seq"], event_id)
            if known is not None:
                payload, reader.known[int(row["seq"])] = known
                found.append({"seq": row["seq"], "type": type_, "payload": payload})
                continue
            try:
                body = await reader.body(dict(row))
            except _MissingBase:
                # Kept only as a base for later rows, its own base pruned: to a reader
                # it is pruned too, like everything before it.
                found = []
                continue
            payload = whole(event_id, type_, body)
            if recent is not None:
                recent.put(session_id, row["seq"], event_id, payload, body, type_)
        found.append({"seq": row["seq"], "type": type_, "payload": payload})
    return found


class _MissingBase(Exception):
    """A row's base is no longer stored (pruned)."""


class _Rebuilder:
    """Rebuilds event bodies from their patches, fetching bases a batch does not hold."""

    def __init__(self, q: Queryable, session_id: str) -> None:
        self._q = q
        self._session_id = session_id
        self.known: dict[int, dict[str, Any]] = {}

    async def body(self, row: dict[str, Any]) -> dict[str, Any]:
        base_seq = row["base_seq"]
        if base_seq is None:
            event: dict[str, Any] = loads(row["payload"])
            body = {k: v for k, v in event.items() if k not in ("event_id", "type")}
        else:
            patch = loads(unpack(row["payload"]))
            body = deltas.apply(await self._base(int(base_seq)), patch)
        self.known[int(row["seq"])] = body
        return body

    async def _base(self, seq: int) -> dict[str, Any]:
        if seq < 0:
            return TEMPLATES[-seq]
        if seq in self.known:
            return self.known[seq]
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
