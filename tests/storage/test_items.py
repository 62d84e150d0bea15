"""An item is stored at its session's next position and, when it is an output of its
turn, at the turn's next output index: both taken by the statement that stores it, on
both backends, and read back as it returned them."""

from __future__ import annotations

import asyncio
from functools import partial
from typing import Any

from storage import Database, items, turns
from storage.database import Tx
from tests.storage.conftest import Target, add_sessions


def test_an_item_takes_its_sessions_next_position_and_its_turns_next_output_index(
    target: Target,
) -> None:
    # (session, turn, output?) in the order they are stored: two sessions interleaved,
    # one with two turns, inputs (no output index) among the outputs.
    plan = [
        ("s1", "t1", False),
        ("s2", "t3", True),
        ("s1", "t1", True),
        ("s1", "t1", True),
        ("s2", "t3", False),
        ("s1", "t1", False),
        ("s1", "t2", True),
        ("s2", "t3", True),
        ("s1", "t2", True),
    ]

    async def main() -> tuple[list[tuple[int, int | None]], list[dict[str, Any]]]:
        db = await Database.open(target("items.db"))

        async def setup(tx: Tx) -> None:
            await add_sessions(tx, "s1", "s2")
            for turn, session, at in (("t1", "s1", 1), ("t3", "s2", 1)):
                await turns.insert(tx, turn, session, "a", at)

        await db.write(setup)

        async def next_turn(tx: Tx) -> None:
            await turns.transition(tx, "t1", ("queued",), "completed", fields={"completed_at": 2})
            await turns.insert(tx, "t2", "s1", "a", 2)

        async def store(tx: Tx, number: int) -> tuple[int, int | None]:
            session, turn, output = plan[number]
            row = {
                "id": f"item_{number}",
                "session_id": session,
                "turn_id": turn,
                "created_at": number,
                "type": "message",
                "status": "completed",
                "output_index": None,
                "payload": {"text": str(number)},
            }
            return await items.insert(tx, row, output=output)

        returned: list[tuple[int, int | None]] = []
        for number, (_, turn, _) in enumerate(plan):
            if turn == "t2" and number == plan.index(("s1", "t2", True)):
                await db.write(next_turn)
            returned.append(await db.write(partial(store, number=number)))
        stored = await db.read(
            lambda r: r.fetchall("SELECT id, position, output_index FROM items ORDER BY id")
        )
        await db.close()
        return returned, [dict(row) for row in stored]

    returned, stored = asyncio.run(main())
    positions = {"s1": 0, "s2": 0}
    outputs = {"t1": 0, "t2": 0, "t3": 0}
    expected: list[tuple[int, int | None]] = []
    for session, turn, output in plan:
        positions[session] += 1
        index = outputs[turn] if output else None
        outputs[turn] += int(output)
        expected.append((positions[session], index))
    assert returned == expected
    by_id = {row["id"]: (row["position"], row["output_index"]) for row in stored}
    assert [by_id[f"item_{n}"] for n in range(len(plan))] == expected
