"""Admission of an ordered batch of session inputs, atomically and replay-safe by key.

Each input event is handled by one branch of one `match`; every branch writes its input
row through `Writer.record` at its `Slot` in the `InputBatch`.
"""

from __future__ import annotations

from typing import Any

import msgspec

from allinone.core import overlays
from allinone.core.archive import refuse_archived
from allinone.core.control.suspended import cancel_suspended, is_suspended
from allinone.core.errors import Conflict, InvalidRequest, NotFound, TurnConflict
from allinone.core.ids import Clock
from allinone.core.recorder import Recorder
from allinone.core.sessions.batch import InputBatch, Slot
from allinone.core.sessions.idempotency import check_batch_replay
from allinone.core.sessions.wire import check_input_size, check_waiting_size, wire_size
from allinone.core.sessions.writer import Writer
from allinone.core.shapes.models import (
    CancelInputEvent,
    ComputerUseApprovalResultInputEvent,
    InputEvent,
    InputMessageParam,
    McpApprovalResultInputEvent,
    MessageInputEvent,
    ToolResultInputEvent,
)
from allinone.core.states import TurnStatus, sources_for
from storage import interactions as interaction_rows
from storage import sessions, turn_inputs, turns
from storage.database import Tx


def messages_of(value: str | list[InputMessageParam], param: str = "input") -> list[dict[str, Any]]:
    """The user messages of an `input` value (a string or a list of messages). Nothing
    empty is admitted: an empty string, an empty list, or a message whose every part is
    empty text is refused naming `param`; nor is an input past `MAX_INPUT_BYTES` as the
    Runtime would receive it (`wire.check_input_size`)."""
    if isinstance(value, str):
        if not value:
            raise InvalidRequest("input must not be empty.", param)
        result = [{"role": "user", "content": [{"type": "input_text", "text": value}]}]
    else:
        if not value:
            raise InvalidRequest("input must contain at least one message.", param)
        result = []
        for index, message in enumerate(value):
            content = msgspec.to_builtins(message.content)
            check_content(content, f"{param}[{index}].content")
            result.append({"role": "user", "content": content})
    check_input_size(result, param)
    return result


def check_content(content: list[dict[str, Any]], param: str) -> None:
    """A message's content must say something: at least one part that is not empty
    text."""
    if not any(part.get("type") != "input_text" or part.get("text") for part in content):
        raise InvalidRequest("A message needs content that is not empty.", param)


class Inputs:
    def __init__(self, writer: Writer, recorder: Recorder, clock: Clock) -> None:
        self._writer = writer
        self._recorder = recorder
        self._clock = clock

    async def admit(
        self, tx: Tx, project_id: str, batch: InputBatch, events: list[InputEvent]
    ) -> bool:
        """Admit `events` in `tx`; False when the batch was admitted before (a replay)."""
        session = await sessions.get(tx, project_id, batch.session_id)
        if session is None:
            raise NotFound()
        if any(not isinstance(event, CancelInputEvent) for event in events):
            # While a kill switch covers the session only cancellations are admitted:
            # checked in this transaction, on the session row it already read.
            refusal = await overlays.input_refusal(tx, project_id, session["agent_id"])
            if refusal is not None:
                raise refusal
        refuse_archived("session", session)
        earlier = (
            None
            if batch.key is None
            else await turn_inputs.batch_hash(tx, batch.session_id, batch.key)
        )
        if earlier is not None:
            check_batch_replay(earlier, batch.digest)
            return False
        for position, event in enumerate(events):
            await self._admit_one(tx, session, Slot(batch, position), event)
        return True

    async def _admit_one(
        self, tx: Tx, session: dict[str, Any], slot: Slot, event: InputEvent
    ) -> None:
        active = await turns.active(tx, slot.batch.session_id)
        match event:
            case MessageInputEvent():
                messages = messages_of(event.input, slot.param("input"))
                await self._message(tx, session, slot, active, messages)
            case CancelInputEvent():
                await self._cancel(tx, slot, active)
            case ToolResultInputEvent():
                await self._tool_result(tx, slot, event)
            case McpApprovalResultInputEvent():
                decision = {"decision": event.response.decision}
                await self._answer(tx, slot, "request_id", event.request_id, "permission", decision)
            case ComputerUseApprovalResultInputEvent():
                # No harness here drives a browser, so no such request is ever pending:
                # a well-formed answer is refused as one to an unknown request.
                response = msgspec.to_builtins(event.response)
                await self._answer(
                    tx, slot, "request_id", event.request_id, "computer_use", response
                )
            case _:
                answers = [
                    {"question_id": a.question_id, "answers": list(a.answers)}
                    for a in event.question_answers
                ]
                response = {"question_answers": answers, "cancelled": event.cancelled}
                await self._answer(tx, slot, "ask_id", event.ask_id, "choice", response)

    async def _message(
        self,
        tx: Tx,
        session: dict[str, Any],
        slot: Slot,
        active: dict[str, Any] | None,
        messages: list[dict[str, Any]],
    ) -> None:
        if active is None:
            await self._writer.start_turn(tx, slot, session["agent_id"], messages)
            return
        # One active turn per session: the message joins it. A queued turn takes it as
        # part of its initial input; a running turn is steered with it (and what it
        # never takes starts the next turn): all of it must fit in one start frame.
        waiting = await turn_inputs.waiting_messages(tx, active["id"])
        check_waiting_size(
            sum(wire_size(row["input"]) for row in waiting),
            wire_size(messages),
            slot.param("input"),
        )
        # Its items are named on the input so an unknown delivery can be marked on them.
        queued = active["status"] == TurnStatus.QUEUED
        item_ids = await self._writer.user_items(
            tx, session["id"], active["id"], messages, announce=not queued
        )
        payload = {"input": messages, "item_ids": item_ids}
        state = "admitted" if queued else "pending"
        await self._writer.record(tx, slot, active["id"], "message", payload, state)
        if not queued:
            slot.batch.steered.append(active["id"])

    async def _cancel(self, tx: Tx, slot: Slot, active: dict[str, Any] | None) -> None:
        turn_id = active["id"] if active else None
        await self._writer.record(tx, slot, turn_id, "cancel", {}, "admitted")
        if active is None:
            return  # an idle session: accepted, no effect
        session_id = slot.batch.session_id
        now = self._clock.now()
        if active["status"] == TurnStatus.QUEUED:
            moved = await turns.transition(
                tx,
                active["id"],
                sources_for(TurnStatus.CANCELLED),
                TurnStatus.CANCELLED,
                fields={"cancel_requested_at": now, "completed_at": now},
            )
            if moved:
                await self._recorder.announce_queued_input(tx, active["id"])
                await self._recorder.emit_turn(
                    tx, "agent.session.turn.cancelled", active["id"], terminal=True
                )
                await self._recorder.emit_session_activity(tx, session_id)
            return
        if is_suspended(active):
            await cancel_suspended(tx, self._recorder, active, now)
            return
        await turns.request_cancel(tx, active["id"], now)
        if active["status"] == TurnStatus.WAITING:
            # Pending actions drop at once; the cancellation receipt settles the turn.
            await interaction_rows.withdraw_open(tx, active["id"])
            moved = await turns.transition(
                tx, active["id"], (TurnStatus.WAITING,), TurnStatus.IN_PROGRESS
            )
            if moved:
                await self._recorder.emit_session_activity(tx, session_id)
        slot.batch.cancels.append(active["id"])

    async def _tool_result(self, tx: Tx, slot: Slot, event: ToolResultInputEvent) -> None:
        session_id = slot.batch.session_id
        call = await interaction_rows.call(tx, session_id, event.call_id)
        if call is None:
            raise InvalidRequest(
                f"Unknown pending tool call: {event.call_id}",
                slot.param("call_id"),
                code="invalid_request_error",
            )
        if call["turn_id"] != event.turn_id:
            raise InvalidRequest(
                "The tool call belongs to a different Turn.", slot.param("turn_id")
            )
        result = {
            "success": event.success,
            "output": msgspec.to_builtins(event.output),
            "error": event.error,
        }
        if call["result"] is not None:
            # Only a replay of the same batch (same Idempotency-Key) answers 202 again;
            # a second result, even an equal one, is refused.
            raise Conflict(f"The tool call {event.call_id} already has a result.")
        turn = await turns.get(tx, call["turn_id"])
        if (
            turn is None
            or turn["status"] not in (TurnStatus.IN_PROGRESS, TurnStatus.WAITING)
            or call["delivery_state"] == "withdrawn"
        ):
            raise TurnConflict("The Turn cannot accept this input in its current state.")
        await interaction_rows.answer_call(tx, session_id, event.call_id, result)
        payload = {"call_id": event.call_id, **result}
        await self._writer.record(tx, slot, call["turn_id"], "tool_result", payload, "admitted")
        slot.batch.steered.append(call["turn_id"])

    async def _answer(
        self,
        tx: Tx,
        slot: Slot,
        field: str,
        interaction_id: str,
        kind: str,
        response: dict[str, Any],
    ) -> None:
        """Answer the pending request `interaction_id` (named by the event's `field`) of
        kind `kind` with `response`."""
        session_id = slot.batch.session_id
        row = await interaction_rows.interaction(tx, session_id, interaction_id)
        if row is None or row["kind"] != kind:
            raise InvalidRequest(f"Unknown pending request: {interaction_id}", slot.param(field))
        if row["response"] is not None:
            raise Conflict(f"The request {interaction_id} already has an answer.")
        if row["state"] != "pending":
            raise TurnConflict("The request is no longer pending.")
        if kind == "choice":
            _check_choice(row, response, slot.param("question_answers"))
        await interaction_rows.answer_interaction(tx, session_id, interaction_id, response)
        payload = {"id": interaction_id, **response}
        await self._writer.record(tx, slot, row["turn_id"], kind, payload, "admitted")
        slot.batch.steered.append(row["turn_id"])


def _check_choice(row: dict[str, Any], response: dict[str, Any], param: str) -> None:
    issued = {q["id"] for q in row["request"].get("questions", [])}
    ids = [a["question_id"] for a in response["question_answers"]]
    if len(set(ids)) != len(ids) or not set(ids) <= issued:
        raise InvalidRequest("Answers must name issued questions, each at most once.", param)
    if response["cancelled"] and ids:
        raise InvalidRequest("A cancelled choice carries no answers.", param)
