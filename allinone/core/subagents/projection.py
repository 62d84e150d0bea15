"""Projects subagent observation frames into rows and journal events.

Called by the Run's projector inside its fenced transaction, so a superseded claim
writes nothing. The order the protocol promises (identity, then lifecycle, then each
turn before its items) is checked: a frame about a subagent or turn Core has not been
told of is a contract violation and changes nothing.

A subagent opened by the root agent also gives the root turn a `create_subagent_call`
item, so the root conversation shows where it came from: its `agent_id` is the agent
that asked for the subagent (the root turn's agent, as the official SDK defines it) and
`x_corebox.subagent_id` names the subagent it opened.

Core names subagents, so a name is unique within its session whatever turn, claim or
process opened the subagent: a harness's name is kept unless the session already has it
(then it gets `-2`, `-3`, ...); without one the subagent is `subagent-N`, N counting the
session's subagents. The session's event
stream carries `agent.session.subagent.created|active|closed`, and each subagent turn's
`agent.session.turn.*` and `turn.item.*` events with `turn.subagent_id` set (clients
following the root turn tell them apart by turn id, as the official SDK's helpers do).
"""

from __future__ import annotations

import itertools
from collections.abc import Awaitable, Callable
from typing import Any

from allinone.core import render
from allinone.core.errors import CoreError
from allinone.core.ids import Clock, Ids
from allinone.core.recorder import Recorder
from allinone.core.subagents import views
from runtime.proto import subagents as wire
from storage import subagents as rows
from storage import turns
from storage.database import Tx

# (tx, type, status, payload, native id, id prefix) -> the new root item
NewRootItem = Callable[[Tx, str, str, dict[str, Any], str, str], Awaitable[dict[str, Any]]]
Violation = Callable[[str], CoreError]


class SubagentProjection:
    def __init__(self, recorder: Recorder, ids: Ids, clock: Clock, violation: Violation) -> None:
        self._recorder = recorder
        self._ids = ids
        self._clock = clock
        self._violation = violation

    async def apply(
        self,
        tx: Tx,
        session_id: str,
        turn_id: str,
        payload: Any,
        new_root_item: NewRootItem,
    ) -> None:
        if isinstance(payload, wire.SubagentIdentity):
            await self._identity(tx, session_id, turn_id, payload, new_root_item)
        elif isinstance(payload, wire.SubagentLifecycle):
            await self._lifecycle(tx, session_id, payload)
        elif isinstance(payload, wire.SubagentTurn):
            await self._turn(tx, session_id, payload)
        elif isinstance(payload, wire.SubagentItem):
            await self._item(tx, session_id, payload)

    async def _known(self, tx: Tx, session_id: str, native_id: str) -> dict[str, Any]:
        found = await rows.by_native(tx, session_id, native_id)
        if found is None:
            raise self._violation(f"a frame names subagent {native_id!r} before its identity")
        return found

    async def _identity(
        self,
        tx: Tx,
        session_id: str,
        turn_id: str,
        frame: wire.SubagentIdentity,
        new_root_item: NewRootItem,
    ) -> None:
        if await rows.by_native(tx, session_id, frame.native_id) is not None:
            raise self._violation(f"the Runtime repeated subagent identity {frame.native_id!r}")
        if frame.parent_native_id:
            parent_agent_id = (await self._known(tx, session_id, frame.parent_native_id))["id"]
        else:
            root = await turns.get(tx, turn_id)
            assert root is not None
            parent_agent_id = root["agent_id"]
        now = self._clock.now()
        row = {
            "id": self._ids.new("subagent"),
            "session_id": session_id,
            "parent_turn_id": turn_id,
            "parent_agent_id": parent_agent_id,
            "native_id": frame.native_id,
            "name": await self._name(tx, session_id, frame.name),
            "instructions": frame.instructions,
            "opened_at": frame.native_created_at // 1000 or now,
            "created_at": now,
            "status": "active",
        }
        await rows.insert(tx, row)
        if not frame.parent_native_id:
            call = {
                "agent_id": parent_agent_id,
                "content": [{"type": "output_text", "text": frame.instructions or ""}],
                "model": None,
                "reasoning_effort": None,
                "x_corebox": {"subagent_id": row["id"]},
            }
            item = await new_root_item(
                tx, "create_subagent_call", "completed", call, frame.source_item_id, "sac"
            )
            await self._recorder.emit_item(tx, "agent.session.turn.item.done", item)
        await self._announce(tx, session_id, "agent.session.subagent.created", row)

    async def _name(self, tx: Tx, session_id: str, wanted: str | None) -> str:
        """A name no other subagent of the session has (see the module docstring)."""
        taken = await rows.names(tx, session_id)
        base = (wanted or "").strip()
        if base:
            candidates = (base if n == 1 else f"{base}-{n}" for n in itertools.count(1))
        else:
            first = len(taken) + 1
            candidates = (f"subagent-{n}" for n in itertools.count(first))
        return next(name for name in candidates if name not in taken)

    async def _announce(self, tx: Tx, session_id: str, type_: str, row: dict[str, Any]) -> None:
        await self._recorder.emit(tx, session_id, type_, {"subagent": views.subagent(row)})

    async def _lifecycle(self, tx: Tx, session_id: str, frame: wire.SubagentLifecycle) -> None:
        row = await self._known(tx, session_id, frame.native_id)
        if row["status"] == "closed":
            return  # closed is final; a late report changes nothing
        closed_at = frame.occurred_at_ms // 1000 or self._clock.now()
        if frame.status == "closed":
            await rows.set_status(tx, row["id"], "closed", closed_at)
            row = {**row, "status": "closed", "closed_at": closed_at}
        await self._announce(tx, session_id, f"agent.session.subagent.{frame.status}", row)

    async def _turn(self, tx: Tx, session_id: str, frame: wire.SubagentTurn) -> None:
        subagent = await self._known(tx, session_id, frame.native_id)
        existing = await rows.turn_by_native(tx, subagent["id"], frame.turn_id)
        if existing is not None and existing["status"] != "in_progress":
            return  # a terminal snapshot is final
        usage = None
        if frame.usage is not None and frame.usage.tokens is not None:
            usage = render.token_usage(frame.usage.tokens)
        terminal = frame.status != "in_progress"
        row = {
            "id": existing["id"] if existing else self._ids.new("turn"),
            "subagent_id": subagent["id"],
            "session_id": session_id,
            "native_id": frame.turn_id,
            "status": frame.status,
            "created_at": existing["created_at"]
            if existing
            else frame.created_at_ms // 1000 or self._clock.now(),
            "started_at": _seconds(frame.started_at_ms),
            "completed_at": (_seconds(frame.completed_at_ms) or self._clock.now())
            if terminal
            else None,
            "usage": usage,
        }
        await rows.upsert_turn(tx, row)
        body = {"session_id": session_id, "turn_id": row["id"], "turn": views.turn(row)}
        if existing is None:
            await self._recorder.emit(tx, session_id, "agent.session.turn.created", body)
        if terminal:
            event = f"agent.session.turn.{frame.status}"
            await self._recorder.emit(tx, session_id, event, {**body, "usage": usage})
        elif existing is None:
            await self._recorder.emit(tx, session_id, "agent.session.turn.in_progress", body)

    async def _item(self, tx: Tx, session_id: str, frame: wire.SubagentItem) -> None:
        subagent = await self._known(tx, session_id, frame.native_id)
        turn = await rows.turn_by_native(tx, subagent["id"], frame.turn_id)
        if turn is None:
            raise self._violation(f"a subagent item names turn {frame.turn_id!r} before it")
        existing = await rows.item_by_native(tx, turn["id"], frame.item_id)
        message = frame.payload
        kind = "input_text" if message.role == "user" else "output_text"
        payload: dict[str, Any] = {
            "role": message.role,
            "content": [{"type": kind, "text": message.text}],
        }
        if message.role == "assistant":
            payload["phase"] = None
        row = {
            "id": existing["id"] if existing else self._ids.new("msg"),
            "subagent_id": subagent["id"],
            "turn_id": turn["id"],
            "native_id": frame.item_id,
            "position": frame.position,
            "type": "message",
            "status": message.status,
            "payload": payload,
            "created_at": self._clock.now(),
        }
        await rows.upsert_item(tx, row)
        output_index = (
            await rows.outputs_before(tx, turn["id"], frame.position)
            if message.role == "assistant"
            else None
        )
        body = {
            "session_id": session_id,
            "turn_id": turn["id"],
            "item": views.item(row),
            "output_index": output_index,
        }
        if existing is None:
            await self._recorder.emit(tx, session_id, "agent.session.turn.item.added", body)
        if message.role == "assistant" and message.status != "in_progress":
            # `item.done` carries output items only; an input message is only `added`.
            await self._recorder.emit(tx, session_id, "agent.session.turn.item.done", body)


def _seconds(ms: int | None) -> int | None:
    return None if not ms else ms // 1000
