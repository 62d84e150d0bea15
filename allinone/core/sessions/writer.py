"""The rows and journal events every admission writes: a new turn, an input row, and the
user's message items. Called inside the admission's transaction."""

from __future__ import annotations

from typing import Any

from allinone.core.errors import TurnConflict
from allinone.core.ids import Clock, Ids
from allinone.core.recorder import Recorder
from allinone.core.sessions.batch import Slot
from storage import items as item_rows
from storage import turn_inputs, turns
from storage.database import Tx
from storage.errors import Conflict as StorageConflict


class Writer:
    def __init__(self, recorder: Recorder, ids: Ids, clock: Clock) -> None:
        self._recorder = recorder
        self._ids = ids
        self._clock = clock

    async def start_turn(
        self, tx: Tx, slot: Slot, agent_id: str, messages: list[dict[str, Any]]
    ) -> str:
        """A queued turn whose initial input is `messages`; a conflict when the session
        already has an active turn."""
        session_id = slot.batch.session_id
        now = self._clock.now()
        turn_id = self._ids.new("turn")
        try:
            await turns.insert(tx, turn_id, session_id, agent_id, now)
        except StorageConflict as exc:
            raise TurnConflict("The session already has an active turn.") from exc
        await self.record(tx, slot, turn_id, "message", {"input": messages}, "admitted")
        await self._recorder.emit_turn(tx, "agent.session.turn.created", turn_id)
        await self._recorder.emit_session(tx, session_id, "agent.session.in_progress")
        await self.user_items(tx, session_id, turn_id, messages, announce=False)
        return turn_id

    async def record(
        self,
        tx: Tx,
        slot: Slot,
        turn_id: str | None,
        kind: str,
        payload: dict[str, Any],
        state: str,
    ) -> None:
        await turn_inputs.insert(
            tx,
            {
                "session_id": slot.batch.session_id,
                "turn_id": turn_id,
                "idempotency_key": slot.batch.key,
                "batch_position": slot.position,
                # A batch without a key has no hash stored: nothing can replay it.
                "batch_hash": None if slot.batch.key is None else slot.batch.digest,
                "kind": kind,
                "payload": payload,
                "state": state,
                "created_at": self._clock.now(),
            },
        )

    async def user_items(
        self,
        tx: Tx,
        session_id: str,
        turn_id: str,
        messages: list[dict[str, Any]],
        *,
        announce: bool = True,
    ) -> list[str]:
        """Write the user items of `messages`; their `item.added` events now, or (not
        `announce`: the turn is queued) when the turn leaves `queued`
        (`Recorder.announce_queued_input`)."""
        now = self._clock.now()
        ids: list[str] = []
        for message in messages:
            item = {
                "id": self._ids.new("msg"),
                "session_id": session_id,
                "turn_id": turn_id,
                "created_at": now,
                "type": "message",
                "status": "completed",
                "output_index": None,
                "payload": {"role": "user", "content": message["content"], "phase": None},
            }
            await item_rows.insert(tx, item)
            if announce:
                await self._recorder.emit_item(tx, "agent.session.turn.item.added", item)
            ids.append(str(item["id"]))
        return ids
