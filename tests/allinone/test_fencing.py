"""A write that carries a stale fencing token is rejected and changes nothing."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from allinone.core.gateway.connection import Connection
from allinone.core.hub import Hub
from allinone.core.ids import Clock, Ids
from allinone.core.orchestration.delivery import Delivery
from allinone.core.orchestration.outcomes import Outcomes
from allinone.core.orchestration.projector import Fenced, Projector, RunProjection
from allinone.core.recorder import Recorder
from runtime.proto import run as wire
from runtime.proto.codec import Frame
from storage import Database, sessions, turn_inputs, turns
from storage.database import Tx


async def _setup(db: Database) -> None:
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
        await turns.insert(tx, "t", "s", "a", 0)
        assert await turns.transition(
            tx, "t", ("queued",), "in_progress", fields={"fencing_token": "7", "started_at": 1}
        )

    await db.write(job)


def test_stale_fencing_token_is_rejected(tmp_path: Path) -> None:
    async def main() -> None:
        db = await Database.open(tmp_path / "f.db")
        await _setup(db)
        clock = Clock()
        ids = Ids(clock)
        recorder = Recorder(Hub(), ids, clock)
        projector = Projector(recorder, ids, clock)
        outcomes = Outcomes(db, recorder, projector, clock)
        stale = RunProjection("s", "t", "6")
        current = RunProjection("s", "t", "7")
        delta = Frame("output_message", "t", wire.OutputMessage(id="m", status="in_progress"), "")

        async def project(tx: Tx, run: RunProjection) -> None:
            await projector.check_fence(tx, run)
            await projector.apply(tx, run, delta)

        with pytest.raises(Fenced):
            await db.write(lambda tx: project(tx, stale))
        with pytest.raises(Fenced):
            await db.write(lambda tx: outcomes.settle(tx, stale, wire.Done(), cancelled=False))

        async def usage(tx: Tx, token: str) -> bool:
            return await turns.set_usage(tx, "t", {"total_tokens": 1}, token)

        assert not await db.write(lambda tx: usage(tx, "6"))
        row = await db.read(lambda r: turns.get(r, "t"))
        assert row is not None and row["status"] == "in_progress" and row["usage"] is None
        items = await db.read(lambda r: r.fetchall("SELECT * FROM items"))
        assert items == []
        # The current holder's writes go through.
        await db.write(lambda tx: project(tx, current))
        await db.write(lambda tx: outcomes.settle(tx, current, wire.Done(), cancelled=False))
        row = await db.read(lambda r: turns.get(r, "t"))
        assert row is not None and row["status"] == "completed"
        await db.close()

    asyncio.run(main())


def test_delivery_and_checkpoint_writes_with_a_stale_token_change_nothing(
    tmp_path: Path,
) -> None:
    async def main() -> None:
        db = await Database.open(tmp_path / "f.db")
        await _setup(db)
        clock = Clock()
        ids = Ids(clock)
        recorder = Recorder(Hub(), ids, clock)
        projector = Projector(recorder, ids, clock)

        async def steer(tx: Tx) -> None:
            await turn_inputs.insert(
                tx,
                {
                    "session_id": "s",
                    "turn_id": "t",
                    "idempotency_key": "k",
                    "batch_position": 0,
                    "batch_hash": "h",
                    "kind": "message",
                    "payload": {"input": [{"content": [{"type": "input_text", "text": "x"}]}]},
                    "state": "pending",
                    "created_at": 0,
                },
            )

        await db.write(steer)
        stale = RunProjection("s", "t", "6")
        delivery = Delivery(db, Connection("d", "c"), stale, projector, recorder, ids, clock)
        await delivery.run()  # its first write is fenced: it stops, nothing written
        rows = await db.read(lambda r: r.fetchall("SELECT state FROM turn_inputs"))
        assert [row["state"] for row in rows] == ["pending"]

        checkpoint = Frame(
            "checkpoint", "t", wire.Checkpoint(boundary="between_model_calls", cursor="{}"), ""
        )
        with pytest.raises(Fenced):
            await db.write(lambda tx: projector.apply(tx, stale, checkpoint))
        row = await db.read(lambda r: turns.get(r, "t"))
        assert row is not None and row["checkpoint_cursor"] is None
        await db.write(lambda tx: projector.apply(tx, RunProjection("s", "t", "7"), checkpoint))
        row = await db.read(lambda r: turns.get(r, "t"))
        assert row is not None and row["checkpoint_boundary"] == "between_model_calls"
        await db.close()

    asyncio.run(main())
