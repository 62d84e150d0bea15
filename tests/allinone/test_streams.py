"""The SSE journal stream: order, stop rules, and a reader that fell behind."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from allinone.core.api.streams import CreationStop, journal_stream, never
from allinone.core.hub import Hub
from allinone.core.ids import Clock, Ids
from allinone.core.recorder import Recorder
from storage import Database, journal, journal_prune, sessions
from storage.database import Tx


async def _session_with_events(db: Database, recorder: Recorder, count: int) -> None:
    async def job(tx: Tx) -> None:
        await tx.execute("INSERT INTO projects (id, name, created_at) VALUES ('p', 'p', 0)")
        await sessions.insert(
            tx,
            {
                "id": "s",
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
        for index in range(count):
            await recorder.emit(
                tx,
                "s",
                "agent.session.turn.output_text.delta",
                {"session_id": "s", "delta": str(index)},
            )

    await db.write(job)


def _blocks(chunks: list[bytes]) -> list[dict[str, object]]:
    events = []
    for chunk in chunks:
        text = chunk.decode()
        assert "id:" not in text and "retry:" not in text
        for line in text.splitlines():
            if line.startswith("data: "):
                events.append(json.loads(line[6:]))
    return events


def test_a_reader_behind_the_retained_journal_gets_stream_interrupted(tmp_path: Path) -> None:
    async def main() -> list[bytes]:
        db = await Database.open(tmp_path / "j.db")
        clock = Clock()
        ids = Ids(clock)
        hub = Hub()
        # Pruning keeps `keep` readable events plus the REACH before them as bases.
        await _session_with_events(db, Recorder(hub, ids, clock), 10 + journal.REACH)
        assert await db.write(lambda tx: journal_prune.prune_batch(tx, 0, keep=3)) == (7, None)
        chunks = [chunk async for chunk in journal_stream(db, hub, ids, "s", 0, never)]
        await db.close()
        return chunks

    chunks = asyncio.run(main())
    assert chunks[0] == b": connected\n\n"
    events = _blocks(chunks)
    assert len(events) == 1
    assert events[0]["type"] == "error"
    assert events[0]["error"]["code"] == "stream_interrupted"  # type: ignore[index]


def test_a_live_reader_gets_every_event_in_order_then_stops_by_rule(tmp_path: Path) -> None:
    async def main() -> list[bytes]:
        db = await Database.open(tmp_path / "k.db")
        clock = Clock()
        ids = Ids(clock)
        hub = Hub()
        recorder = Recorder(hub, ids, clock)
        await _session_with_events(db, recorder, 3)

        async def finish(tx: Tx) -> None:
            await recorder.emit(
                tx, "s", "agent.session.turn.created", {"session_id": "s", "turn_id": "t"}
            )
            await recorder.emit(
                tx, "s", "agent.session.turn.completed", {"session_id": "s", "turn_id": "t"}
            )
            await recorder.emit(tx, "s", "agent.session.idle", {"session": {}})
            await recorder.emit(tx, "s", "agent.session.in_progress", {"session": {}})

        stream = journal_stream(db, hub, ids, "s", 0, CreationStop())
        chunks = [await anext(stream)]
        writer = asyncio.create_task(db.write(finish))
        chunks.extend([chunk async for chunk in stream])
        await writer
        await db.close()
        return chunks

    events = _blocks(asyncio.run(main()))
    assert [e["type"] for e in events] == ["agent.session.turn.output_text.delta"] * 3 + [
        "agent.session.turn.created",
        "agent.session.turn.completed",
        "agent.session.idle",
    ]
    assert len({e["event_id"] for e in events}) == len(events)


def test_events_committed_here_are_taken_from_memory_and_a_gap_or_deletion_reads_the_journal(
    tmp_path: Path,
) -> None:
    async def main() -> tuple[list[list[bytes]], list[int], list[str]]:
        db = await Database.open(tmp_path / "m.db")
        clock = Clock()
        ids = Ids(clock)
        hub = Hub()
        # As in the server: every wake-up is relayed (here, recorded as sent to others).
        relayed: list[str] = []

        def relay(session_id: str) -> None:
            hub.notify_here(session_id)
            relayed.append(session_id)

        hub.relay_through(relay)
        recorder = Recorder(hub, ids, clock)
        await _session_with_events(db, recorder, 2)

        async def deltas(tx: Tx) -> None:
            for text in ("a", "b", "c"):
                await recorder.emit(
                    tx, "s", "agent.session.turn.output_text.delta", {"delta": text}
                )

        def reads() -> int:
            return db.counters()["read_statements"]

        stream = journal_stream(db, hub, ids, "s", 0, never, obfuscation=False)
        assert await anext(stream) == b": connected\n\n"
        chunks: list[list[bytes]] = [[await anext(stream)]]  # the journal: seq 1-2
        statements = []
        await db.write(deltas)  # seq 3-5, remembered whole
        before = reads()
        chunks.append([await anext(stream)])
        statements.append(reads() - before)
        await db.write(deltas)  # seq 6-8, but seq 7 is no longer remembered whole
        hub.recent.put("s", 7, "evt_gone", "{}", {}, None)
        before = reads()
        chunks.append([await anext(stream)])
        statements.append(reads() - before)

        async def delete(tx: Tx) -> None:
            await sessions.delete(tx, "s", clock.now())
            recorder.wake(tx, "s")

        await db.write(delete)
        chunks.append([chunk async for chunk in stream])  # the stream ends
        journaled = await db.read(lambda r: journal.after(r, "s", 0))
        await db.close()
        assert relayed and set(relayed) == {"s"}  # other processes are told every time
        return chunks, statements, [row["payload"] for row in journaled]

    chunks, statements, journaled = asyncio.run(main())
    payloads = [
        line[len("data: ") :]
        for group in chunks
        for chunk in group
        for line in chunk.decode().splitlines()
        if line.startswith("data: ")
    ]
    assert payloads == journaled and len(journaled) == 8  # byte for byte, in order
    assert statements[0] == 0  # seq 3-5 came from memory
    assert statements[1] >= 1  # the gap at seq 7 was filled from the journal
    assert chunks[-1] == []
