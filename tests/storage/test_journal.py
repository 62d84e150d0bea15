"""Tier 3: the compact journal gives back every event exactly as it was appended."""

from __future__ import annotations

import asyncio
import contextlib
import random
from functools import partial
from typing import Any

from storage import Database, deltas, journal, journal_prune, sessions
from storage.database import Tx
from storage.rows import dumps, loads
from tests.storage.conftest import Target

TYPES = (
    "agent.session.idle",
    "agent.session.turn.created",
    "agent.session.turn.item.added",
    "agent.session.turn.output_text.delta",
    "agent.session.turn.output_text.done",
    "x_corebox.something.new",
)


def _value(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.randrange(9 if depth < 3 else 6)
    scalars: list[Any] = [None, True, False, 0, 1, 1.0, 2.5, "", "a", "évt"]
    if kind < 6:
        return rng.choice(scalars)
    if kind < 7:
        return [_value(rng, depth + 1) for _ in range(rng.randrange(3))]
    keys = rng.sample(["a", "b", "c", "d", "e", "", "1"], rng.randrange(5))
    return {key: _value(rng, depth + 1) for key in keys}


def _mutate(rng: random.Random, value: Any) -> Any:
    if isinstance(value, dict) and value and rng.random() < 0.8:
        out = dict(value)
        key = rng.choice(list(out))
        if rng.random() < 0.2:
            del out[key]
        else:
            out[key] = _mutate(rng, out[key])
        if rng.random() < 0.2:
            out[rng.choice("xyz")] = _value(rng)
        if rng.random() < 0.1:
            out = dict(reversed(list(out.items())))
        return out
    return _value(rng)


def test_a_patch_rebuilds_the_same_bytes_for_random_values() -> None:
    rng = random.Random(7)
    for _ in range(3000):
        base = _value(rng)
        new = _mutate(rng, base)
        patch = loads(dumps(deltas.diff(base, new)))
        assert dumps(deltas.apply(base, patch)) == dumps(new)


def test_booleans_integers_and_floats_stay_apart() -> None:
    for base, new in ((1, True), (0, False), (1, 1.0), (True, 1), ({"a": 1}, {"a": 1.0})):
        assert dumps(deltas.apply(base, deltas.diff(base, new))) == dumps(new)
    assert deltas.diff({"a": [1, {"b": 2}]}, {"a": [1, {"b": 2}]}) == {}


async def _session(db: Database, session_id: str) -> None:
    async def job(tx: Tx) -> None:
        await tx.execute(
            "INSERT INTO projects (id, name, created_at) VALUES ('p', 'p', 0)"
            " ON CONFLICT DO NOTHING"
        )
        await sessions.insert(
            tx,
            {
                "id": session_id,
                "project_id": "p",
                "agent_id": "a",
                "harness": "scripted",
                "created_at": 0,
                "agent": {},
                "environment": {"type": "none"},
                "metadata": {},
                "vault_ids": [],
            },
        )

    await db.write(job)


def _body(rng: random.Random, index: int) -> dict[str, Any]:
    shape = rng.randrange(4)
    if shape == 0:
        return {"session": {"id": "s", "status": rng.choice(["idle", "in_progress"]), "n": index}}
    if shape == 1:
        return {"session_id": "s", "turn_id": f"turn_{index // 5}", "turn": {"status": "queued"}}
    if shape == 2:
        return {"session_id": "s", "turn_id": "t", "item": _value(rng), "output_index": index}
    return {
        "session_id": "s",
        "turn_id": "t",
        "delta": "x" * rng.randrange(20),
        "extra": _value(rng),
    }


async def _append_all(
    db: Database, bases: journal.Bases, rng: random.Random, count: int
) -> list[str]:
    """Append `count` events in small transactions, some of which roll back; return the
    JSON of every committed event in order."""
    written: list[str] = []
    for start in range(0, count, 7):

        async def job(tx: Tx, start: int = start) -> list[str]:
            out = []
            for index in range(start, min(start + 7, count)):
                seq = await sessions.next_event_seq(tx, "s", 0)
                event_id = f"evt_{index:028x}"
                type_ = rng.choice(TYPES)
                body = _body(rng, index)
                await journal.append_compact(tx, bases, "s", seq, (event_id, type_, body))
                out.append(dumps({"event_id": event_id, "type": type_, **body}))
            if start % 5 == 3:
                raise RuntimeError("roll back this job")
            return out

        with contextlib.suppress(RuntimeError):
            written.extend(await db.write(job))
    return written


def test_events_read_back_byte_for_byte_across_rollbacks_and_restarts(target: Target) -> None:
    async def main() -> tuple[list[str], list[str]]:
        db = await Database.open(target("j.db"))
        await _session(db, "s")
        rng = random.Random(3)
        written = await _append_all(db, journal.Bases(), rng, 300)
        # A restart: nothing remembered, later events still find valid bases.
        written += await _append_all(db, journal.Bases(), rng, 100)
        await db.write(
            lambda tx: journal.append(tx, "s", 999, "evt_legacy", "agent.session.idle", "{}")
        )
        rows = []
        seq = 0
        while batch := await db.read(partial(journal.after, session_id="s", seq=seq, limit=50)):
            rows.extend(batch)
            seq = batch[-1]["seq"]
        await db.close()
        return written, [row["payload"] for row in rows]

    written, read = asyncio.run(main())
    assert read == [*written, "{}"]


def test_a_delta_whose_latest_delta_is_not_the_stored_row_is_still_stored(
    target: Target,
) -> None:
    """A delta is stored against the latest delta of its session, checked against the
    stored row. Here another writer (another Core process on a shared database, with
    its own `Bases`) stored different events at the sequences of a rolled-back job, so
    this writer's latest delta is not the stored row: the next delta is stored against
    something else and reads back the same."""
    delta = "agent.session.turn.output_text.delta"
    ids = iter(range(1, 1000))

    async def append(db: Database, bases: journal.Bases, texts: str, fail: bool) -> list[str]:
        async def job(tx: Tx) -> list[str]:
            out = []
            for text in texts:
                seq = await sessions.next_event_seq(tx, "s", 0)
                body = {"session_id": "s", "turn_id": "t", "item_id": "m", "delta": text}
                event = (f"evt_{next(ids):028x}", delta, body)
                await journal.append_compact(tx, bases, "s", seq, event)
                out.append(dumps({"event_id": event[0], "type": delta, **body}))
            if fail:
                raise RuntimeError("roll back this job")
            return out

        try:
            return await db.write(job)
        except RuntimeError:
            return []

    async def main() -> tuple[list[str], list[str], dict[int, int]]:
        db = await Database.open(target("d.db"))
        await _session(db, "s")
        bases = journal.Bases()
        written = await append(db, bases, "abc", fail=False)
        written += await append(db, bases, "de", fail=True)  # sequences 4 and 5, undone
        written += await append(db, journal.Bases(), "fg", fail=False)  # the other writer
        written += await append(db, bases, "hij", fail=False)
        read = await db.read(partial(journal.after, session_id="s", seq=0))
        stored = await db.read(
            lambda q: q.fetchall("SELECT seq, base_seq FROM session_events ORDER BY seq")
        )
        await db.close()
        return written, [row["payload"] for row in read], {r[0]: r[1] for r in stored}

    written, read, stored = asyncio.run(main())
    assert read == written
    assert len(stored) == 8
    assert stored[6] < 0  # not against sequence 5, which holds another event than it knew
    assert [stored[seq] for seq in (2, 3, 7, 8)] == [1, 2, 6, 7]


def test_pruning_leaves_every_retained_event_readable(target: Target) -> None:
    async def main() -> tuple[int, list[str], list[str]]:
        db = await Database.open(target("p.db"))
        await _session(db, "s")
        written = await _append_all(db, journal.Bases(), random.Random(5), 1400)
        deleted, _ = await db.write(lambda tx: journal_prune.prune_batch(tx, 0, keep=10))
        last = await db.read(lambda r: journal.latest_seq(r, "s"))
        rows = await db.read(lambda r: journal.after(r, "s", last - 10, limit=10))
        await db.close()
        return deleted, written[-10:], [row["payload"] for row in rows]

    deleted, expected, read = asyncio.run(main())
    assert deleted > 0
    assert read == expected


def test_an_event_whose_base_was_pruned_reads_as_pruned(target: Target) -> None:
    async def main() -> tuple[list[dict[str, Any]], list[str]]:
        db = await Database.open(target("m.db"))
        await _session(db, "s")
        written = await _append_all(db, journal.Bases(), random.Random(9), 40)
        await db.write(lambda tx: tx.execute("DELETE FROM session_events WHERE seq < 15"))
        rows = await db.read(lambda r: journal.after(r, "s", 14))
        await db.close()
        return rows, written

    rows, written = asyncio.run(main())
    first = rows[0]["seq"]
    assert first > 15 and [row["seq"] for row in rows] == list(range(first, len(written) + 1))
    assert [row["payload"] for row in rows] == written[first - 1 :]


def test_remembered_events_read_the_same_and_a_stale_entry_is_never_used(target: Target) -> None:
    async def main() -> tuple[list[str], list[str], list[str], list[str]]:
        db = await Database.open(target("r.db"))
        await _session(db, "s")
        written = await _append_all(db, journal.Bases(), random.Random(11), 60)
        recent = journal.Recent()
        plain = await db.read(partial(journal.after, session_id="s", seq=0))
        first = await db.read(partial(journal.after, session_id="s", seq=0, recent=recent))
        # A second reader finds every event remembered and takes it whole.
        second = await db.read_now(partial(journal.after, session_id="s", seq=0, recent=recent))
        # An entry naming another event at a stored sequence is ignored, never served.
        row = second[0]
        recent.put("s", row["seq"], "evt_someone_else", '{"stale":true}', {"stale": True})
        third = await db.read_now(partial(journal.after, session_id="s", seq=0, recent=recent))
        await db.close()
        return (
            written,
            [r["payload"] for r in plain],
            [r["payload"] for r in first],
            [r["payload"] for r in second] + [r["payload"] for r in third],
        )

    written, plain, first, again = asyncio.run(main())
    assert plain == written
    assert first == written
    assert again == written + written


def test_remembered_events_are_bounded() -> None:
    recent = journal.Recent(limit=3)
    for seq in range(1, 6):
        recent.put("s", seq, f"evt_{seq}", "{}", {})
    assert recent.get("s", 1, "evt_1") is None
    assert recent.get("s", 2, "evt_2") is None
    assert recent.get("s", 5, "evt_5") == ("{}", {})
    assert recent.get("s", 5, "evt_4") is None


def test_following_reads_the_events_and_the_deletion_in_one_statement(target: Target) -> None:
    async def main() -> tuple[list[Any], list[Any], list[Any], list[Any], int]:
        db = await Database.open(target("f.db"))
        await _session(db, "s")
        written = await _append_all(db, journal.Bases(), random.Random(13), 30)
        recent = journal.Recent()
        await db.read_now(partial(journal.follow, session_id="s", seq=10, recent=recent))
        # Every event remembered: the read is the one statement.
        before = db.counters()["read_statements"]
        live = await db.read_now(partial(journal.follow, session_id="s", seq=10, recent=recent))
        statements = db.counters()["read_statements"] - before
        caught_up = await db.read(partial(journal.follow, session_id="s", seq=len(written)))
        await db.write(lambda tx: tx.execute("UPDATE sessions SET deleted_at = 1 WHERE id = 's'"))
        deleted = await db.read(partial(journal.follow, session_id="s", seq=20, limit=3))
        unknown = await db.read(partial(journal.follow, session_id="nobody", seq=0))
        await db.close()
        return written, live, [caught_up, deleted], unknown, statements

    written, live, (caught_up, deleted), unknown, statements = asyncio.run(main())
    rows, gone = live
    assert not gone and [row["payload"] for row in rows] == written[10:]
    assert [row["seq"] for row in rows] == list(range(11, len(written) + 1))
    assert caught_up == ([], False)
    assert deleted[1] is True and [row["payload"] for row in deleted[0]] == written[20:23]
    assert unknown == ([], True)
    assert statements == 1


def test_a_whole_event_spliced_from_its_body_text_is_the_same_bytes() -> None:
    rng = random.Random(17)
    bodies: list[dict[str, Any]] = [{}, {"type": "x"}, {"event_id": 1, "a": 'é\n"'}]
    while len(bodies) < 500:
        value = _value(rng)
        if isinstance(value, dict):
            bodies.append(value)
    for body in bodies:
        expected = dumps({"event_id": "evt_1", "type": "agent.session.idle", **body})
        spliced = journal.whole("evt_1", "agent.session.idle", body, dumps(body))
        assert spliced == expected == journal.whole("evt_1", "agent.session.idle", body)


def test_the_first_patch_offered_is_the_smallest_of_all() -> None:
    """However many bases a session remembers, `_patches` offers first a short patch
    against the latest event of the type when there is one, then the smallest patch of
    all that could be made (the newest base's on a tie, the template's when no base's is
    smaller), then each a larger one, the template's last; each rebuilds the event."""
    rng = random.Random(7)
    for round_ in range(400):
        bases = journal.Bases()
        seq = 0
        for _ in range(rng.randrange(1, 12)):
            seq += rng.randrange(1, 4)
            body = _family_body(rng)
            base = journal._Base(seq, f"evt_{seq}", 1, body)
            bases.remember("s", rng.choice(TYPES), journal.family(body), base)
        body, type_ = _family_body(rng), rng.choice(TYPES)
        kind = journal.family(body)
        seq += 1
        offered = list(journal._patches(bases, "s", seq, (type_, kind), body))
        options = [
            (dumps(deltas.diff(base.body, body)), base)
            for base in bases.candidates("s", type_)
            if journal._usable(base, seq)
        ]
        latest = bases.latest("s", type_)
        short = [o for o in options if o[1] is latest and len(o[0]) <= journal.SHORT_PATCH]
        assert offered[: len(short)] == short, round_
        rest = offered[len(short) :]
        template = dumps(deltas.diff(journal.TEMPLATES[kind], body))
        smaller = [o for o in options if len(o[0]) < len(template) and o not in short]
        assert rest[0] == min(smaller, key=lambda o: len(o[0]), default=(template, None))
        assert rest[-1] == (template, None)
        lengths = [len(patch) for patch, _ in rest]
        assert lengths == sorted(set(lengths)), round_
        for patch, base in offered:
            source = journal.TEMPLATES[kind] if base is None else base.body
            assert dumps(deltas.apply(source, loads(patch))) == dumps(body)


def _family_body(rng: random.Random) -> dict[str, Any]:
    """An event body of a random family, with random fields beside its own."""
    body: dict[str, Any] = {rng.choice(["session", "turn", "item", "part"]): _value(rng)}
    for key in rng.sample(["status", "delta", "turn_id", "item_id", "usage"], rng.randrange(4)):
        body[key] = _value(rng)
    return body


def test_the_rows_a_job_appends_are_stored_together_when_it_ends(target: Target) -> None:
    """A job's events against templates, its own earlier rows or a committed job's rows
    go into the journal at its end: 16 rows a statement, after one read of the session's
    key."""
    delta = "agent.session.turn.output_text.delta"

    async def main() -> tuple[list[int], list[str], list[str]]:
        db = await Database.open(target("b.db"))
        await _session(db, "s")
        bases = journal.Bases()
        statements: list[int] = []
        written: list[str] = []
        for first, count in ((1, 10), (11, 20)):

            async def job(tx: Tx, first: int = first, count: int = count) -> list[str]:
                out = []
                for seq in range(first, first + count):
                    body = {"session_id": "s", "turn_id": "t", "item_id": "m", "delta": "x" * seq}
                    event = (f"evt_{seq:028x}", delta, body)
                    await journal.append_compact(tx, bases, "s", seq, event)
                    out.append(dumps({"event_id": event[0], "type": delta, **body}))
                return out

            before = db.counters()["write_statements"]
            written += await db.write(job)
            statements.append(db.counters()["write_statements"] - before)
        read = await db.read(partial(journal.after, session_id="s", seq=0))
        await db.close()
        return statements, written, [row["payload"] for row in read]

    statements, written, read = asyncio.run(main())
    assert read == written
    # The first job: its key and its 10 rows. The second: its key, then 16 and 4 rows (the
    # first of them against the first job's last row, which committed).
    assert statements == [2, 3]


def test_a_row_remembered_from_a_rolled_back_job_is_not_taken_for_this_jobs_own(
    target: Target,
) -> None:
    """A rolled-back job's event stays remembered as a base at its sequence; a later job
    that writes another event at that sequence must not store a patch against the
    remembered one as if it were its own row."""
    delta, done = "agent.session.turn.output_text.delta", "agent.session.turn.output_text.done"

    def body(text: str) -> dict[str, Any]:
        return {"session_id": "s", "turn_id": "t", "item_id": "m", "delta": text}

    async def main() -> tuple[list[str], list[str]]:
        db = await Database.open(target("r.db"))
        await _session(db, "s")
        bases = journal.Bases()

        async def undone(tx: Tx) -> None:
            await journal.append_compact(tx, bases, "s", 1, ("evt_" + "1" * 28, delta, body("a")))
            raise RuntimeError("roll back this job")

        with contextlib.suppress(RuntimeError):
            await db.write(undone)
        other = {"session_id": "s", "turn_id": "t", "item_id": "m", "text": "entirely other"}
        events = [("evt_" + "2" * 28, done, other), ("evt_" + "3" * 28, delta, body("b"))]

        async def job(tx: Tx) -> None:
            for seq, event in enumerate(events, start=1):
                await journal.append_compact(tx, bases, "s", seq, event)

        await db.write(job)
        read = await db.read(partial(journal.after, session_id="s", seq=0))
        await db.close()
        expected = [dumps({"event_id": i, "type": t, **b}) for i, t, b in events]
        return expected, [row["payload"] for row in read]

    expected, read = asyncio.run(main())
    assert read == expected
