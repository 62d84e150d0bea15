"""Appends public events to a session's journal inside the transaction that made the
change, and renders the session and turn snapshots those events carry.

Readers are woken only after the commit; they then read the journal itself.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from allinone.core import budgets, render
from allinone.core.hub import Hub
from allinone.core.ids import Clock, Ids
from allinone.core.model_providers import public_view
from allinone.core.overlays import view as overlay_view
from allinone.core.states import SessionStatus, session_status
from storage import (
    environments,
    execution_settings,
    interactions,
    items,
    journal,
    rewinds,
    sessions,
    turns,
)
from storage import overlays as overlay_rows
from storage.database import Tx
from storage.rows import Queryable, loads


async def required_actions(
    q: Queryable, session_id: str, turn_id: str
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The turn's open actions: (public required actions, corebox user-choice prompts).

    User-choice prompts are a corebox extension; the official SDK's strict validation
    rejects unknown required-action types, so they travel in `session.x_corebox`.
    """
    public: list[dict[str, Any]] = [
        {
            "type": "function_call",
            "turn_id": turn_id,
            "call_id": row["call_id"],
            "name": row["name"],
            "arguments": row["arguments"],
        }
        for row in await interactions.open_calls(q, turn_id)
    ]
    choices: list[dict[str, Any]] = []
    for row in await interactions.open_interactions(q, turn_id):
        request = row["request"]
        if row["kind"] == "permission":
            public.append(
                {
                    "type": "mcp_approval_request",
                    "request_id": row["interaction_id"],
                    "turn_id": turn_id,
                    "request": {
                        "type": "mcp_tool_call",
                        "server_label": "corebox",
                        "message": request.get("title", ""),
                        "name": request.get("tool"),
                        "arguments": request.get("payload") or {},
                    },
                }
            )
        else:
            choices.append(
                {
                    "type": "x_corebox_user_choice",
                    "ask_id": row["interaction_id"],
                    "turn_id": turn_id,
                    "questions": request.get("questions", []),
                }
            )
    return public, choices


async def _hidden_turn_ids(q: Queryable, row: dict[str, Any]) -> list[str]:
    if not row["has_rewinds"]:
        return []
    hidden = await rewinds.hidden_turn_ids(q, row["id"])
    if not hidden:
        return []
    rows = await q.fetchall(
        "SELECT id FROM turns WHERE session_id = ? ORDER BY created_at, id", (row["id"],)
    )
    return [str(r["id"]) for r in rows if r["id"] in hidden]


async def session_view(q: Queryable, row: dict[str, Any]) -> dict[str, Any]:
    """The public AgentSession for a session row as `sessions.get_for_view` reads it
    (with the facts its status, usage, overlays and hidden turns derive from), with its
    derived status."""
    latest_status = row["latest_turn_status"]
    actions: list[dict[str, Any]] = []
    choices: list[dict[str, Any]] = []
    if latest_status == "waiting":
        actions, choices = await required_actions(q, row["id"], row["latest_turn_id"])
    environment_failure = await _environment_failure(q, row)
    status = session_status(
        latest_status,
        len(actions) + len(choices),
        environment_failed=environment_failure is not None,
    )
    usage = turns.usage_of(row)
    error = None
    if status is SessionStatus.FAILED:
        error = environment_failure or "The environment could not be prepared."
    view = render.session(
        row, status=status.value, required_actions=actions, usage=usage, error=error
    )
    spend = await budgets.spend_view(q, row)
    if spend is not None:
        view["spend_control"] = spend
    in_force = []
    if row["has_overlays"]:
        in_force = await overlay_rows.active(q, row["project_id"], row["agent_id"])
    view["x_corebox"] = {
        "required_actions": choices,
        "harness": row["harness"],
        # What the session froze about its model (never a key), and every feature it
        # uses that works below `supported` in the capability matrix.
        "model_provider": public_view(execution_settings.settings_of(row).get("model_provider")),
        "capability_notes": execution_settings.notes_of(row),
        # How the session's commands are confined on the host running them.
        "confinement": execution_settings.settings_of(row).get("confinement"),
        # The session and turn this session was forked from (control/forks.py), or null.
        "forked_from": (
            {"session_id": row["forked_from_session_id"], "turn_id": row["forked_from_turn_id"]}
            if row.get("forked_from_session_id")
            else None
        ),
        # Turns rewinds hid from the model's context (control/rewinds.py), oldest first.
        "hidden_turn_ids": await _hidden_turn_ids(q, row),
        # The saved agent's version the session is pinned to (null for an inline agent)
        # and its configuration revision (one more per update that changes it).
        "agent_version": row.get("agent_version"),
        "config_revision": row.get("config_revision") or 1,
        # Safety overlays in force for the session (its project's and its agent's).
        "overlays": [overlay_view(o) for o in in_force],
    }
    if row.get("archived_at") is not None:
        view["x_corebox"]["archived_at"] = row["archived_at"]
    return view


async def current_view(q: Queryable, session_id: str, project_id: str) -> dict[str, Any] | None:
    """The session's snapshot as the API shows it now: None unless it is a live session
    of `project_id` (checked by the statement that reads it)."""
    row = await sessions.get_for_view(q, session_id, project_id)
    return None if row is None else await session_view(q, row)


async def _environment_failure(q: Queryable, row: dict[str, Any]) -> str | None:
    """Why the session's environment could not be prepared, or None while it can run."""
    environment_id = row.get("environment_id")
    if not environment_id:
        return None
    environment = await environments.get_any(q, environment_id)
    if environment is None or environment["status"] != "failed":
        return None
    return str(environment.get("failure") or "The environment could not be prepared.")


# The key under which a job keeps the journal sequence its events reached (`Tx.memo`).
_SEQ = "journal_seq"
# The key under which a job keeps the events it appended to a session (`Tx.memo`).
_COMMITTED = "journal_committed"


class Recorder:
    def __init__(self, hub: Hub, ids: Ids, clock: Clock) -> None:
        self._hub = hub
        self._ids = ids
        self._clock = clock
        self._bases = journal.Bases()

    async def emit(self, tx: Tx, session_id: str, type_: str, body: dict[str, Any]) -> str:
        """Append one event; return its event_id."""
        seq = await self._next_seq(tx, session_id)
        event_id = self._ids.new("evt")
        event = (event_id, type_, body)
        body, payload = await journal.append_compact(tx, self._bases, session_id, seq, event)
        self._committed(tx, session_id).append((seq, event_id, payload, body, type_))
        return event_id

    def _committed(self, tx: Tx, session_id: str) -> list[journal.Committed]:
        """The events this job appends to the session, in order. Once the job commits,
        one after-commit callback remembers them all in `recent` and then wakes the
        session's readers once (with the last sequence), not once per event: callbacks
        run together on the event loop, so no reader can tell the difference."""
        key = (_COMMITTED, session_id)
        events: list[journal.Committed] | None = tx.memo.get(key)
        if events is None:
            events = tx.memo[key] = []
            tx.after_commit(partial(self._announce, session_id, events))
        return events

    def _announce(self, session_id: str, events: list[journal.Committed]) -> None:
        self._hub.recent.put_many(session_id, events)
        self._hub.committed(session_id, events[-1][0])

    async def _next_seq(self, tx: Tx, session_id: str) -> int:
        """The session's next journal sequence. The job's first event takes it from the
        session row; later events of the same job count on in memory, and the row is
        brought up to the last one once, when the job ends."""
        key = (_SEQ, session_id)
        seq: int | None = tx.memo.get(key)
        if seq is None:
            seq = await sessions.next_event_seq(tx, session_id, self._clock.now())
        else:
            seq += 1
            tx.before_end(key, partial(sessions.set_event_seq, tx, session_id, seq))
        tx.memo[key] = seq
        return seq

    async def latest_seq(self, tx: Tx, session_id: str) -> int:
        """The session's latest journal sequence as this job has it (its own events
        included)."""
        seq: int | None = tx.memo.get((_SEQ, session_id))
        return seq if seq is not None else await journal.latest_seq(tx, session_id)

    def wake(self, tx: Tx, session_id: str) -> None:
        """Wake the session's stream readers once `tx` commits, without an event (they
        re-read the session: a deleted one ends its streams)."""
        tx.after_commit(lambda: self._hub.notify(session_id))

    async def emit_session(self, tx: Tx, session_id: str, type_: str) -> dict[str, Any]:
        row = await sessions.get_for_view(tx, session_id)
        assert row is not None
        view = await session_view(tx, row)
        await self.emit(tx, session_id, type_, {"session": view})
        return view

    async def emit_session_activity(self, tx: Tx, session_id: str) -> None:
        """Emit the event that matches the session's derived status now."""
        row = await sessions.get_for_view(tx, session_id)
        assert row is not None
        view = await session_view(tx, row)
        type_ = {
            "idle": "agent.session.idle",
            "in_progress": "agent.session.in_progress",
            "requires_action": "agent.session.requires_action",
            "failed": "agent.session.failed",
        }[view["status"]]
        await self.emit(tx, session_id, type_, {"session": view})

    async def emit_turn(self, tx: Tx, type_: str, turn_id: str, *, terminal: bool = False) -> None:
        row = await turns.get(tx, turn_id)
        assert row is not None
        body: dict[str, Any] = {
            "session_id": row["session_id"],
            "turn_id": turn_id,
            "turn": render.turn(row),
        }
        if terminal:
            body["usage"] = row.get("usage")
        await self.emit(tx, row["session_id"], type_, body)

    async def emit_turn_phase(self, tx: Tx, turn_id: str) -> None:
        """Announce a running turn's new control phase (`pause_requested`, `pausing`,
        `paused`, `resuming`): the turn's snapshot, in the event the official SDK knows
        for a running turn (`turn.in_progress`); readers find the phase in
        `turn.x_corebox.phase`."""
        await self.emit_turn(tx, "agent.session.turn.in_progress", turn_id)

    async def announce_queued_input(self, tx: Tx, turn_id: str) -> None:
        """Emit `item.added` for the user items a queued turn took as input. They are
        written when admitted and announced when the turn leaves `queued`: right after
        `turn.in_progress` when it is claimed (the hosted order), or before its
        terminal event when it ends without running."""
        for item in await items.of_turn(tx, turn_id):
            await self.emit_item(tx, "agent.session.turn.item.added", item)

    async def emit_item(self, tx: Tx, type_: str, item_row: dict[str, Any]) -> None:
        await self.emit(
            tx,
            item_row["session_id"],
            type_,
            {
                "session_id": item_row["session_id"],
                "turn_id": item_row["turn_id"],
                "item": render.item(item_row),
                "output_index": item_row.get("output_index"),
            },
        )


def decode_event(payload: str) -> dict[str, Any]:
    value: dict[str, Any] = loads(payload)
    return value
