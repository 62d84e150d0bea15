"""The `turn_inputs` rows: every admitted input of a session, by batch and position, with
the idempotency key and batch hash that make a replayed batch recognisable (both NULL for
a batch admitted without a key; such inputs are deleted once their ended turn consumed
them, `storage.turns.transition`)."""

from __future__ import annotations

from typing import Any

from storage.database import Tx
from storage.rows import Queryable, dumps, record


async def insert(tx: Tx, row: dict[str, Any]) -> None:
    """`row` holds session_id, turn_id, idempotency_key, batch_position, batch_hash,
    kind, payload (a dict), state and created_at."""
    await tx.execute(
        "INSERT INTO turn_inputs (session_id, turn_id, idempotency_key, batch_position,"
        " batch_hash, kind, payload, state, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            row["session_id"],
            row["turn_id"],
            row["idempotency_key"],
            row["batch_position"],
            row["batch_hash"],
            row["kind"],
            dumps(row["payload"]),
            row["state"],
            row["created_at"],
        ),
    )


async def batch_hash(q: Queryable, session_id: str, key: str) -> str | None:
    """The hash of the batch admitted earlier under `key`, or None."""
    row = await q.fetchone(
        "SELECT batch_hash FROM turn_inputs WHERE session_id = ? AND idempotency_key = ? LIMIT 1",
        (session_id, key),
    )
    return None if row is None else str(row["batch_hash"])


# The states of a message its turn has not taken: admitted to a queued turn, on its way
# to steer a running one, or refused by it (such messages start the next turn).
_NOT_TAKEN = "('admitted', 'pending', 'delivered', 'written', 'refused')"


async def waiting_messages(q: Queryable, turn_id: str) -> list[dict[str, Any]]:
    """The payloads (`{"input": [...], ...}`) of the messages `turn_id` holds and has not
    yet taken, oldest first."""
    rows = await q.fetchall(
        f"SELECT seq, payload FROM turn_inputs WHERE turn_id = ? AND kind = 'message'"
        f" AND state IN {_NOT_TAKEN} ORDER BY seq",
        (turn_id,),
    )
    return [r["payload"] for r in (record(row, ("payload",)) for row in rows) if r is not None]
