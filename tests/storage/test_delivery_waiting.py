"""What waits for a turn's run is learned in one statement, and it must agree with the
lists the run then reads: steering messages, function results and decisions."""

from __future__ import annotations

import asyncio
from functools import partial

from storage import Database, interactions
from storage.database import Tx
from storage.rows import Queryable
from tests.storage.conftest import Target

_SETUP = (
    "INSERT INTO projects (id, name, created_at) VALUES ('p', 'p', 0)",
    "INSERT INTO sessions (id, project_id, agent_id, harness, created_at, last_active_at,"
    " agent, environment, metadata, vault_ids) VALUES ('s', 'p', 'a', 'scripted', 0, 0,"
    " '{}', '{}', '{}', '[]')",
)


def _input(seq: int, turn_id: str, state: str) -> str:
    return (
        "INSERT INTO turn_inputs (seq, session_id, turn_id, idempotency_key, batch_position,"
        " kind, payload, state, created_at)"
        f" VALUES ({seq}, 's', '{turn_id}', 'k{seq}', 0, 'message', '[]', '{state}', 0)"
    )


def _call(call_id: str, turn_id: str, state: str) -> str:
    return (
        "INSERT INTO function_calls (session_id, turn_id, call_id, name, arguments, created_at,"
        f" delivery_state) VALUES ('s', '{turn_id}', '{call_id}', 'f', '{{}}', 0, '{state}')"
    )


def _decision(interaction_id: str, turn_id: str, state: str) -> str:
    return (
        "INSERT INTO interactions (session_id, turn_id, interaction_id, kind, request, state,"
        f" created_at) VALUES ('s', '{turn_id}', '{interaction_id}', 'choice', '{{}}',"
        f" '{state}', 0)"
    )


# Each step adds one row; what then waits for turn `t`, as (steering, calls, decisions).
_STEPS = (
    (_input(1, "t", "initial"), (False, False, False)),
    (_input(2, "other", "pending"), (False, False, False)),
    (_call("c1", "t", "delivering"), (False, False, False)),
    (_decision("i1", "t", "pending"), (False, False, False)),
    (_decision("i2", "t", "answered"), (False, False, True)),
    (_call("c2", "t", "answered"), (False, True, True)),
    (_input(3, "t", "pending"), (True, True, True)),
)


async def _lists(r: Queryable) -> tuple[bool, bool, bool]:
    return (
        bool(await interactions.steering_inputs(r, "t", "pending")),
        bool(await interactions.calls_to_deliver(r, "t")),
        bool(await interactions.interactions_to_deliver(r, "t")),
    )


def test_what_waits_for_a_run_agrees_with_the_lists_it_reads(target: Target) -> None:
    async def main() -> list[tuple[tuple[bool, bool, bool], tuple[bool, bool, bool]]]:
        db = await Database.open(target("waiting.db"))
        seen = []
        try:
            for sql in _SETUP:
                await db.write(partial(Tx.execute, sql=sql))
            for sql, _ in _STEPS:
                await db.write(partial(Tx.execute, sql=sql))
                flags = await db.read(partial(interactions.waiting_for_delivery, turn_id="t"))
                seen.append((flags, await db.read(_lists)))
        finally:
            await db.close()
        return seen

    seen = asyncio.run(main())
    assert [flags for flags, _ in seen] == [expected for _, expected in _STEPS]
    assert [lists for _, lists in seen] == [expected for _, expected in _STEPS]


def _unanswered_call(call_id: str, turn_id: str) -> str:
    return (
        "INSERT INTO function_calls (session_id, turn_id, call_id, name, arguments, created_at)"
        f" VALUES ('s', '{turn_id}', '{call_id}', 'f', '{{}}', 0)"
    )


# Each step changes one row; whether turn `t` then waits on the client for an answer.
_ANSWERS = (
    (_call("c1", "t", "answered"), False),
    (_unanswered_call("c2", "other"), False),
    (_unanswered_call("c3", "t"), True),
    ("UPDATE function_calls SET delivery_state = 'answered' WHERE call_id = 'c3'", False),
    (_decision("i1", "t", "answered"), False),
    (_decision("i2", "t", "pending"), True),
    ("UPDATE interactions SET state = 'withdrawn' WHERE interaction_id = 'i2'", False),
    (_unanswered_call("c4", "t"), True),
    ("UPDATE function_calls SET delivery_state = 'withdrawn' WHERE call_id = 'c4'", False),
)


def test_a_turn_awaits_the_client_while_a_call_or_a_request_is_unanswered(
    target: Target,
) -> None:
    async def main() -> list[bool]:
        db = await Database.open(target("awaits.db"))
        seen = []
        try:
            for sql in _SETUP:
                await db.write(partial(Tx.execute, sql=sql))
            for sql, _ in _ANSWERS:
                await db.write(partial(Tx.execute, sql=sql))
                seen.append(await db.read(partial(interactions.awaits_client, turn_id="t")))
        finally:
            await db.close()
        return seen

    assert asyncio.run(main()) == [expected for _, expected in _ANSWERS]
