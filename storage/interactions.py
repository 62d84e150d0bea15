"""Pending work that waits on the client: function calls and their results, permission
requests and user-choice prompts with their answers, and steering inputs.

Delivery states move forward only: answered -> delivering -> applied | refused | unknown;
`withdrawn` when the turn ends or is cancelled first. Nothing here is ever re-delivered:
a delivery whose receipt was lost stays `unknown`.
"""

from __future__ import annotations

from typing import Any

from storage.database import Tx
from storage.rows import Queryable, dumps, record

OPEN_CALL_STATES = ("answered", "delivering")


async def insert_call(
    tx: Tx, session_id: str, turn_id: str, call_id: str, name: str, arguments: str, now: int
) -> None:
    await tx.execute(
        "INSERT INTO function_calls (session_id, turn_id, call_id, name, arguments, created_at)"
        " VALUES (?, ?, ?, ?, ?, ?)",
        (session_id, turn_id, call_id, name, arguments, now),
    )


async def call(q: Queryable, session_id: str, call_id: str) -> dict[str, Any] | None:
    row = await q.fetchone(
        "SELECT * FROM function_calls WHERE session_id = ? AND call_id = ?", (session_id, call_id)
    )
    return record(row, ("result",))


async def answer_call(tx: Tx, session_id: str, call_id: str, result: dict[str, Any]) -> None:
    await tx.execute(
        "UPDATE function_calls SET result = ?, delivery_state = 'answered'"
        " WHERE session_id = ? AND call_id = ? AND result IS NULL",
        (dumps(result), session_id, call_id),
    )


async def set_call_state(tx: Tx, session_id: str, call_id: str, state: str) -> None:
    applied = 1 if state == "applied" else 0
    await tx.execute(
        "UPDATE function_calls SET delivery_state = ?, applied = ?"
        " WHERE session_id = ? AND call_id = ?",
        (state, applied, session_id, call_id),
    )


async def set_call_delivering(tx: Tx, session_id: str, call_id: str, delivery_id: str) -> None:
    await tx.execute(
        "UPDATE function_calls SET delivery_state = 'delivering', delivery_id = ?"
        " WHERE session_id = ? AND call_id = ?",
        (delivery_id, session_id, call_id),
    )


async def call_by_delivery(q: Queryable, turn_id: str, delivery_id: str) -> dict[str, Any] | None:
    row = await q.fetchone(
        "SELECT * FROM function_calls WHERE turn_id = ? AND delivery_id = ?", (turn_id, delivery_id)
    )
    return record(row, ("result",))


# What waits to be delivered to a turn's run: steering messages, function results and
# decisions (each condition takes the turn's id).
_PENDING_STEERING = "turn_inputs WHERE turn_id = ? AND kind = 'message' AND state = 'pending'"
_CALLS_TO_DELIVER = "function_calls WHERE turn_id = ? AND delivery_state = 'answered'"
_INTERACTIONS_TO_DELIVER = "interactions WHERE turn_id = ? AND state = 'answered'"


async def waiting_for_delivery(q: Queryable, turn_id: str) -> tuple[bool, bool, bool]:
    """Whether steering messages, function results and decisions wait for the turn's
    run, in one statement (a run reads a list only when something waits in it)."""
    row = await q.fetchone(
        f"SELECT EXISTS (SELECT 1 FROM {_PENDING_STEERING}) AS steering,"
        f" EXISTS (SELECT 1 FROM {_CALLS_TO_DELIVER}) AS calls,"
        f" EXISTS (SELECT 1 FROM {_INTERACTIONS_TO_DELIVER}) AS answered",
        (turn_id, turn_id, turn_id),
    )
    assert row is not None
    return bool(row["steering"]), bool(row["calls"]), bool(row["answered"])


async def awaits_client(q: Queryable, turn_id: str) -> bool:
    """Whether the turn waits on the client for something not answered yet: a function
    call without a result, or a permission request or user choice still pending."""
    row = await q.fetchone(
        "SELECT EXISTS (SELECT 1 FROM function_calls WHERE turn_id = ? AND applied = 0"
        " AND delivery_state IS NULL)"
        " OR EXISTS (SELECT 1 FROM interactions WHERE turn_id = ? AND state = 'pending')"
        " AS waits",
        (turn_id, turn_id),
    )
    assert row is not None
    return bool(row["waits"])


async def calls_to_deliver(q: Queryable, turn_id: str) -> list[dict[str, Any]]:
    rows = await q.fetchall(
        f"SELECT * FROM {_CALLS_TO_DELIVER} ORDER BY created_at, call_id", (turn_id,)
    )
    return [r for r in (record(row, ("result",)) for row in rows) if r is not None]


async def open_calls(q: Queryable, turn_id: str) -> list[dict[str, Any]]:
    """Calls that still need the client or the Runtime: the session's required actions."""
    rows = await q.fetchall(
        "SELECT * FROM function_calls WHERE turn_id = ? AND applied = 0"
        " AND (delivery_state IS NULL OR delivery_state IN ('answered', 'delivering'))"
        " ORDER BY created_at, call_id",
        (turn_id,),
    )
    return [r for r in (record(row, ("result",)) for row in rows) if r is not None]


async def insert_interaction(
    tx: Tx,
    session_id: str,
    turn_id: str,
    interaction_id: str,
    kind: str,
    request: dict[str, Any],
    now: int,
) -> None:
    await tx.execute(
        "INSERT INTO interactions (session_id, turn_id, interaction_id, kind, request, state,"
        " created_at) VALUES (?, ?, ?, ?, ?, 'pending', ?)",
        (session_id, turn_id, interaction_id, kind, dumps(request), now),
    )


async def interaction(q: Queryable, session_id: str, interaction_id: str) -> dict[str, Any] | None:
    row = await q.fetchone(
        "SELECT * FROM interactions WHERE session_id = ? AND interaction_id = ?",
        (session_id, interaction_id),
    )
    return record(row, ("request", "response"))


async def answer_interaction(
    tx: Tx, session_id: str, interaction_id: str, response: dict[str, Any]
) -> None:
    await tx.execute(
        "UPDATE interactions SET response = ?, state = 'answered'"
        " WHERE session_id = ? AND interaction_id = ? AND state = 'pending'",
        (dumps(response), session_id, interaction_id),
    )


async def set_interaction_state(tx: Tx, session_id: str, interaction_id: str, state: str) -> None:
    await tx.execute(
        "UPDATE interactions SET state = ? WHERE session_id = ? AND interaction_id = ?",
        (state, session_id, interaction_id),
    )


async def open_interactions(q: Queryable, turn_id: str) -> list[dict[str, Any]]:
    rows = await q.fetchall(
        "SELECT * FROM interactions WHERE turn_id = ?"
        " AND state IN ('pending', 'answered', 'delivering') ORDER BY created_at, interaction_id",
        (turn_id,),
    )
    return [r for r in (record(row, ("request", "response")) for row in rows) if r is not None]


async def interactions_to_deliver(q: Queryable, turn_id: str) -> list[dict[str, Any]]:
    rows = await q.fetchall(
        f"SELECT * FROM {_INTERACTIONS_TO_DELIVER} ORDER BY created_at, interaction_id",
        (turn_id,),
    )
    return [r for r in (record(row, ("request", "response")) for row in rows) if r is not None]


async def withdraw_open(tx: Tx, turn_id: str) -> None:
    """The turn ended or was cancelled: nothing still open will be delivered."""
    await tx.execute(
        "UPDATE function_calls SET delivery_state = 'withdrawn' WHERE turn_id = ? AND applied = 0"
        " AND (delivery_state IS NULL OR delivery_state = 'answered')",
        (turn_id,),
    )
    await tx.execute(
        "UPDATE interactions SET state = 'withdrawn' WHERE turn_id = ?"
        " AND state IN ('pending', 'answered')",
        (turn_id,),
    )


async def steering_inputs(q: Queryable, turn_id: str, state: str) -> list[dict[str, Any]]:
    rows = await q.fetchall(
        "SELECT * FROM turn_inputs WHERE turn_id = ? AND kind = 'message' AND state = ?"
        " ORDER BY seq",
        (turn_id, state),
    )
    return [r for r in (record(row, ("payload",)) for row in rows) if r is not None]


async def set_input_state(tx: Tx, seq: int, state: str) -> None:
    await tx.execute("UPDATE turn_inputs SET state = ? WHERE seq = ?", (state, seq))


async def unsettled_steering(q: Queryable, turn_id: str) -> list[dict[str, Any]]:
    """Steering messages of the turn the harness never confirmed consuming, in order."""
    rows = await q.fetchall(
        "SELECT * FROM turn_inputs WHERE turn_id = ? AND kind = 'message'"
        " AND state NOT IN ('initial', 'applied', 'admitted') ORDER BY seq",
        (turn_id,),
    )
    return [r for r in (record(row, ("payload",)) for row in rows) if r is not None]


async def move_inputs(tx: Tx, seqs: list[int], turn_id: str) -> None:
    """Give never-delivered messages to a new queued turn as its initial input."""
    for seq in seqs:
        await tx.execute(
            "UPDATE turn_inputs SET turn_id = ?, state = 'admitted' WHERE seq = ?",
            (turn_id, seq),
        )
