"""Projects the frames of one Run into items and journal events.

All writes for a Run check its fencing token: a write from a superseded claim changes
nothing. A `checkpoint` frame commits the turn's checkpoint at the journal position it
reached; the first later frame that starts something (anything but usage) records what
is in flight since (`storage.checkpoints`). The projector keeps only what it needs
between frames (open messages and their accumulated text); everything a reader can see
is in the database.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import msgspec

from allinone.core import budgets, overlays, render
from allinone.core.errors import CoreError
from allinone.core.ids import Clock, Ids
from allinone.core.orchestration.transitions import move
from allinone.core.recorder import Recorder
from allinone.core.states import TurnStatus
from allinone.core.subagents.projection import SubagentProjection
from runtime.proto import run as wire
from runtime.proto.codec import Frame
from runtime.proto.errors import classify_engine_failure
from runtime.proto.functions import FunctionCall
from runtime.proto.interactions import (
    InteractionDecisionAck,
    PermissionCancel,
    PermissionRequest,
    PromptForUserChoice,
)
from runtime.proto.subagents import SUBAGENT_FRAMES
from storage import checkpoints, interactions, sessions, turns
from storage import items as item_rows
from storage import overlays as overlay_rows
from storage.database import Tx


class Fenced(CoreError):
    """The Run's claim was superseded; its writes are refused."""


class ContractViolation(CoreError):
    """A Run frame breaks the protocol's contract (a repeated call or interaction id, a
    contradictory receipt). Nothing of the offending frame was written; the turn must fail with
    `contract_violation`, its effects unknown."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass
class _OpenMessage:
    item: dict[str, Any]
    text: str = ""


@dataclass
class RunProjection:
    session_id: str
    turn_id: str
    fencing_token: str
    messages: dict[str, _OpenMessage] = field(default_factory=dict)
    tools: dict[str, dict[str, Any]] = field(default_factory=dict)
    error: wire.Error | None = None
    engine_code: str = ""
    engine_status: int = 0
    done: bool = False
    # Whether something started since the latest checkpoint (or since the claim).
    inflight: bool = False
    # The session's per-turn deadline passed and Core cancelled the turn for it.
    deadline_passed: bool = False
    # Core answered an interaction itself (an overlay's denial), or the Runtime withdrew
    # one that steering messages were held behind: delivery must run.
    answered: bool = False
    # Once a usage the turn reported took the session's spend past its spend_control
    # limit (as the limit stood at that report).
    over_budget: bool = False
    price: dict[str, Any] | None = None  # the session's price (cents), None: tokens
    # The session had a spend_control when the turn was claimed: only then is each usage
    # checked against the limit (a limit first set during the turn applies from the next).
    limited: bool = False


class Projector:
    def __init__(self, recorder: Recorder, ids: Ids, clock: Clock) -> None:
        self._recorder = recorder
        self._ids = ids
        self._clock = clock
        self._subagents = SubagentProjection(recorder, ids, clock, ContractViolation)

    async def check_fence(self, tx: Tx, run: RunProjection) -> None:
        row = await tx.fetchone(
            "SELECT 1 FROM turns WHERE id = ? AND fencing_token = ?"
            " AND status IN ('in_progress', 'waiting')",
            (run.turn_id, run.fencing_token),
        )
        if row is None:
            raise Fenced(run.turn_id)

    async def apply(self, tx: Tx, run: RunProjection, frame: Frame) -> None:
        """Apply one Run frame (not `done`; see `settle`)."""
        payload = frame.payload
        if isinstance(payload, wire.Checkpoint):
            await self._checkpoint(tx, run, payload)
            return
        if not run.inflight and not isinstance(payload, wire.Usage):
            run.inflight = True
            await checkpoints.started(tx, run.turn_id, run.fencing_token, operation_of(frame))
        await self._apply(tx, run, frame)

    async def _apply(self, tx: Tx, run: RunProjection, frame: Frame) -> None:
        payload = frame.payload
        if isinstance(payload, wire.OutputMessage):
            await self._output_message(tx, run, payload)
        elif isinstance(payload, wire.Delta):
            await self._delta(tx, run, payload)
        elif isinstance(payload, wire.Thinking):
            await self._thinking(tx, run, payload)
        elif isinstance(payload, wire.ToolCall):
            await self._tool_call(tx, run, payload)
        elif isinstance(payload, wire.Usage):
            if payload.tokens is not None:
                await turns.set_usage(
                    tx, run.turn_id, render.token_usage(payload.tokens), run.fencing_token
                )
                # Against the limit as it stands now: one lowered mid-turn applies here.
                if run.limited and not run.over_budget:
                    run.over_budget = await budgets.exceeded(tx, run.session_id, run.price)
        elif isinstance(payload, wire.Error):
            run.error = payload
            run.engine_code, run.engine_status = classify_engine_failure(
                payload.code, payload.http_status
            )
        elif isinstance(payload, FunctionCall):
            await self._function_call(tx, run, payload)
        elif isinstance(payload, PermissionRequest):
            await self._permission(tx, run, payload)
        elif isinstance(payload, PromptForUserChoice):
            await self._interaction(
                tx,
                run,
                payload.ask_id,
                "choice",
                {"questions": msgspec.to_builtins(payload.questions)},
            )
        elif isinstance(payload, InteractionDecisionAck):
            if payload.applied and payload.error_code:
                raise ContractViolation(
                    f"a receipt says applied and carries error code {payload.error_code!r};"
                    " whether the input was applied is unknown"
                )
            if payload.applied:
                await self._result_applied(tx, run, payload.delivery_id)
        elif isinstance(payload, PermissionCancel):
            await interactions.set_interaction_state(tx, run.session_id, frame.id, "withdrawn")
            await self.resume_if_clear(tx, run.session_id, run.turn_id, run.fencing_token)
            run.answered = True  # steering held behind the request may go now
        elif frame.type in SUBAGENT_FRAMES:
            await self._subagents.apply(
                tx, run.session_id, run.turn_id, payload, partial(self._new_item, run=run)
            )

    async def _checkpoint(self, tx: Tx, run: RunProjection, frame: wire.Checkpoint) -> None:
        seq = await self._recorder.latest_seq(tx, run.session_id)
        now = self._clock.now()
        if not await checkpoints.commit(
            tx, run.turn_id, run.fencing_token, frame.boundary, frame.cursor, seq, now
        ):
            raise Fenced(run.turn_id)
        run.inflight = False

    async def _new_item(
        self,
        tx: Tx,
        type_: str,
        status: str,
        payload: dict[str, Any],
        native_id: str,
        prefix: str,
        *,
        run: RunProjection,
    ) -> dict[str, Any]:
        item = {
            "id": self._ids.new(prefix),
            "session_id": run.session_id,
            "turn_id": run.turn_id,
            "created_at": self._clock.now(),
            "type": type_,
            "status": status,
            "output_index": None,  # the turn's next, taken where the item is stored
            "native_id": native_id,
            "payload": payload,
        }
        _, item["output_index"] = await item_rows.insert(tx, item, output=True)
        await self._recorder.emit_item(tx, "agent.session.turn.item.added", item)
        return item

    async def _output_message(self, tx: Tx, run: RunProjection, frame: wire.OutputMessage) -> None:
        open_message = run.messages.get(frame.id)
        if open_message is None:
            payload: dict[str, Any] = {
                "role": "assistant",
                "content": [],
                "phase": frame.phase or None,
            }
            item = await self._new_item(
                tx, "message", "in_progress", payload, frame.id, "msg", run=run
            )
            open_message = _OpenMessage(item)
            run.messages[frame.id] = open_message
            await self._part(tx, run, open_message, "agent.session.turn.content_part.added", "")
        if frame.status == "in_progress":
            return
        text = frame.text if frame.text is not None else open_message.text
        if frame.phase:
            open_message.item["payload"]["phase"] = frame.phase
        await self._finish_message(tx, run, open_message, text, frame.status)

    async def _finish_message(
        self, tx: Tx, run: RunProjection, message: _OpenMessage, text: str, status: str
    ) -> None:
        item = message.item
        await self._recorder.emit(
            tx,
            run.session_id,
            "agent.session.turn.output_text.done",
            {
                "session_id": run.session_id,
                "turn_id": run.turn_id,
                "item_id": item["id"],
                "output_index": item["output_index"],
                "content_index": 0,
                "text": text,
            },
        )
        await self._part(tx, run, message, "agent.session.turn.content_part.done", text)
        item["payload"]["content"] = [{"type": "output_text", "text": text}]
        item["status"] = status
        await item_rows.update(tx, item["id"], status, item["payload"])
        await self._recorder.emit_item(tx, "agent.session.turn.item.done", item)
        run.messages.pop(item["native_id"], None)

    async def _part(
        self, tx: Tx, run: RunProjection, message: _OpenMessage, type_: str, text: str
    ) -> None:
        item = message.item
        await self._recorder.emit(
            tx,
            run.session_id,
            type_,
            {
                "session_id": run.session_id,
                "turn_id": run.turn_id,
                "item_id": item["id"],
                "output_index": item["output_index"],
                "content_index": 0,
                "part": {"type": "output_text", "text": text},
            },
        )

    async def _delta(self, tx: Tx, run: RunProjection, frame: wire.Delta) -> None:
        message = run.messages.get(frame.item_id)
        if message is None:
            await self._output_message(tx, run, wire.OutputMessage(frame.item_id, "in_progress"))
            message = run.messages[frame.item_id]
        message.text += frame.delta
        item = message.item
        await self._recorder.emit(
            tx,
            run.session_id,
            "agent.session.turn.output_text.delta",
            {
                "session_id": run.session_id,
                "turn_id": run.turn_id,
                "item_id": item["id"],
                "output_index": item["output_index"],
                "content_index": 0,
                "delta": frame.delta,
            },
        )

    async def _thinking(self, tx: Tx, run: RunProjection, frame: wire.Thinking) -> None:
        payload = {"summary": [{"type": "summary_text", "text": frame.text}]}
        item = await self._new_item(
            tx,
            "reasoning",
            "completed",
            payload,
            frame.item_id or self._ids.new("think"),
            "rs",
            run=run,
        )
        await self._recorder.emit_item(tx, "agent.session.turn.item.done", item)

    async def _tool_call(self, tx: Tx, run: RunProjection, frame: wire.ToolCall) -> None:
        """Observations with a public item: `command_execution`, `mcp_tool_call` as an
        `mcp_call` item, and `function_call` (a call the Runtime answered itself) as a
        `function_call` item and its `function_call_output`. Other kinds (file reads and
        writes) have none."""
        observation = frame.observation
        if observation is None:
            return
        if observation.kind == "function_call":
            if frame.stage == "after":
                await self._answered_call(tx, run, frame.id, observation)
            return
        if observation.kind == "command_execution":
            type_, prefix = "command_execution", "cmd"
            payload = {
                "command": observation.command,
                "cwd": observation.cwd,
                "duration_ms": observation.duration_ms,
                "exit_code": observation.exit_code,
                "output": observation.output if isinstance(observation.output, str) else None,
            }
        elif observation.kind == "mcp_tool_call":
            type_, prefix = "mcp_call", "mcp"
            payload = {
                "name": observation.name,
                "server_label": observation.server,
                "arguments": observation.arguments,
                "output": observation.output,
                "error": observation.error,
            }
        else:
            return
        existing = run.tools.get(frame.id)
        if frame.stage == "before" or existing is None:
            existing = await self._new_item(
                tx, type_, "in_progress", payload, frame.id, prefix, run=run
            )
            run.tools[frame.id] = existing
        if frame.stage == "after":
            status = "completed" if observation.status in ("completed", "ok") else "failed"
            existing["payload"] = payload
            existing["status"] = status
            await item_rows.update(tx, existing["id"], status, payload)
            await self._recorder.emit_item(tx, "agent.session.turn.item.done", existing)
            run.tools.pop(frame.id, None)

    async def _function_call(self, tx: Tx, run: RunProjection, frame: FunctionCall) -> None:
        """Register the pending call before announcing it, so a client's result can never
        arrive for a call Core does not know."""
        if await interactions.call(tx, run.session_id, frame.call_id) is not None:
            raise ContractViolation(f"the Runtime repeated function call id {frame.call_id!r}")
        arguments = bytes(frame.arguments).decode() or "{}"
        await interactions.insert_call(
            tx, run.session_id, run.turn_id, frame.call_id, frame.name, arguments, self._clock.now()
        )
        payload = {"call_id": frame.call_id, "name": frame.name, "arguments": arguments}
        item = await self._new_item(
            tx, "function_call", "completed", payload, frame.call_id, "fc", run=run
        )
        await self._recorder.emit_item(tx, "agent.session.turn.item.done", item)
        await self._wait(tx, run)

    async def _permission(self, tx: Tx, run: RunProjection, payload: PermissionRequest) -> None:
        """A permission request becomes a pending interaction, or, for a tool a safety
        overlay disables, is denied at once with the structured `tool_disabled` result."""
        request = {
            "tool": payload.tool,
            "title": payload.title,
            "detail": payload.detail,
            "payload": payload.payload,
        }
        await _fresh_interaction(tx, run.session_id, payload.request_id)
        refusal = await _disabled_refusal(tx, run.session_id, payload.tool)
        if refusal is None:
            await self._interaction(tx, run, payload.request_id, "permission", request)
            return
        await interactions.insert_interaction(
            tx, run.session_id, run.turn_id, payload.request_id, "permission", request,
            self._clock.now(),
        )  # fmt: skip
        await interactions.answer_interaction(
            tx, run.session_id, payload.request_id, {"decision": "deny", "message": refusal}
        )
        run.answered = True

    async def _interaction(
        self, tx: Tx, run: RunProjection, interaction_id: str, kind: str, request: dict[str, Any]
    ) -> None:
        await _fresh_interaction(tx, run.session_id, interaction_id)
        await interactions.insert_interaction(
            tx, run.session_id, run.turn_id, interaction_id, kind, request, self._clock.now()
        )
        await self._wait(tx, run)

    async def _wait(self, tx: Tx, run: RunProjection) -> None:
        await move(
            tx,
            run.turn_id,
            TurnStatus.WAITING,
            (TurnStatus.IN_PROGRESS, TurnStatus.WAITING),
            fencing_token=run.fencing_token,
        )
        await self._recorder.emit_session_activity(tx, run.session_id)

    async def _result_applied(self, tx: Tx, run: RunProjection, delivery_id: str) -> None:
        """The Runtime applied a function result: the output item appears now."""
        call = await interactions.call_by_delivery(tx, run.turn_id, delivery_id)
        if call is None or call["applied"]:
            return
        await interactions.set_call_state(tx, run.session_id, call["call_id"], "applied")
        result = call["result"] or {}
        output = {
            "call_id": call["call_id"],
            "output": result.get("output"),
            "error": result.get("error"),
        }
        await self._call_output(tx, run, output, bool(result.get("success")))
        await self.resume_if_clear(tx, run.session_id, run.turn_id, run.fencing_token)

    async def _answered_call(
        self, tx: Tx, run: RunProjection, call_id: str, observation: wire.ToolObservation
    ) -> None:
        """A function call the Runtime answered itself (a tool a safety overlay
        disables): its `function_call` item, then the `function_call_output` with the
        answer the model saw (an input item like a client's result: `item.added` only,
        as the public item events allow). No client is asked."""
        payload = {
            "call_id": call_id,
            "name": observation.name,
            "arguments": _text(observation.arguments),
        }
        item = await self._new_item(
            tx, "function_call", "completed", payload, call_id, "fc", run=run
        )
        await self._recorder.emit_item(tx, "agent.session.turn.item.done", item)
        failed = observation.error is not None
        output = {
            "call_id": call_id,
            "output": None if failed else _text(observation.output),
            "error": _text(observation.error) if failed else None,
        }
        await self._call_output(tx, run, output, not failed)

    async def _call_output(
        self, tx: Tx, run: RunProjection, payload: dict[str, Any], success: bool
    ) -> None:
        """Store and announce (`item.added`) a `function_call_output` item."""
        item = {
            "id": self._ids.new("fco"),
            "session_id": run.session_id,
            "turn_id": run.turn_id,
            "created_at": self._clock.now(),
            "type": "function_call_output",
            "status": "completed" if success else "failed",
            "output_index": None,
            "native_id": None,
            "payload": payload,
        }
        await item_rows.insert(tx, item)
        await self._recorder.emit_item(tx, "agent.session.turn.item.added", item)

    async def resume_if_clear(
        self, tx: Tx, session_id: str, turn_id: str, fencing_token: str
    ) -> None:
        """Move a waiting turn back to in_progress once nothing is pending."""
        if await interactions.open_calls(tx, turn_id):
            return
        if await interactions.open_interactions(tx, turn_id):
            return
        moved = await move(
            tx, turn_id, TurnStatus.IN_PROGRESS, (TurnStatus.WAITING,), fencing_token=fencing_token
        )
        if moved:
            await self._recorder.emit_session_activity(tx, session_id)

    async def close_unfinished(self, tx: Tx, run: RunProjection) -> None:
        """Mark what the Run left open `incomplete`, keeping partial content."""
        for message in list(run.messages.values()):
            await self._finish_message(tx, run, message, message.text, "incomplete")
        for item in await item_rows.unfinished(tx, run.turn_id):
            await item_rows.update(tx, item["id"], "incomplete", item["payload"])
            item["status"] = "incomplete"
            await self._recorder.emit_item(tx, "agent.session.turn.item.done", item)
        run.tools.clear()


def operation_of(frame: Frame) -> str:
    """How the operation a frame starts is named when its outcome is unknown."""
    payload = frame.payload
    if isinstance(payload, FunctionCall):
        return f"function call {payload.name} ({payload.call_id})"
    if isinstance(payload, wire.ToolCall):
        return f"tool call {payload.name} ({payload.id})"
    if isinstance(payload, PermissionRequest):
        return f"permission request {payload.request_id}"
    if isinstance(payload, PromptForUserChoice):
        return f"user choice {payload.ask_id}"
    if isinstance(payload, wire.OutputMessage):
        return f"model output {payload.id}"
    if isinstance(payload, (wire.Delta, wire.Thinking)):
        return f"model output {payload.item_id}"
    if isinstance(payload, InteractionDecisionAck):
        return f"the input delivered as {payload.delivery_id}"
    return frame.type


def _text(value: Any) -> str:
    """An observed value as the text a function call item carries."""
    return value if isinstance(value, str) else json.dumps(value)


async def _fresh_interaction(tx: Tx, session_id: str, interaction_id: str) -> None:
    """Raise ContractViolation when the session already has an interaction of that id:
    a Runtime names each approval and question once."""
    if await interactions.interaction(tx, session_id, interaction_id) is not None:
        raise ContractViolation(f"the Runtime repeated interaction id {interaction_id!r}")


async def _disabled_refusal(tx: Tx, session_id: str, tool: str) -> str | None:
    """The `tool_disabled` result when an active overlay disables `tool` for the session."""
    session = await sessions.get_any(tx, session_id)
    if session is None:
        return None
    active = await overlay_rows.active(tx, session["project_id"], session["agent_id"])
    name = overlays.TOOL_ALIASES.get(tool, tool)
    version = overlays.disabled_tools(active).get(name)
    return None if version is None else overlays.disabled_result(name, version)
